//! Thread schedules of the file store, controlled (filled in below).
