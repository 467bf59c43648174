//! stripe
