//! The state's lists held inline, and its hash taken in one pass: the checker clones, hashes
//! and drops every state it generates (several per unique state), so a state without heap
//! allocations and with a short hash stream is what makes it cheap.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, DerefMut};

/// A list of at most `N` items held inline (no heap allocation, so the state is `Copy`). It
/// reads as a slice; equality and hashing see only the items in it, never the unused slots.
#[derive(Clone, Copy)]
pub struct Bounded<T: Copy + Default, const N: usize> {
    len: u8,
    items: [T; N],
}

impl<T: Copy + Default, const N: usize> Bounded<T, N> {
    /// Append `item`. The capacities are bounds of the model (see where each list is
    /// declared); going past one is a mistake in the model, reported at once.
    pub fn push(&mut self, item: T) {
        let len = usize::from(self.len);
        assert!(
            len < N,
            "a model list holds at most {N} items: raise its bound"
        );
        self.items[len] = item;
        self.len += 1;
    }

    /// Remove the item at `i` (if there is one), keeping the order of the others.
    pub fn remove(&mut self, i: usize) {
        let len = usize::from(self.len);
        if i < len {
            self.items.copy_within(i + 1..len, i);
            self.items[len - 1] = T::default();
            self.len -= 1;
        }
    }

    /// Keep only the items for which `keep` (which may change them) says so, in order.
    pub fn retain_mut(&mut self, mut keep: impl FnMut(&mut T) -> bool) {
        let len = usize::from(self.len);
        let mut kept = 0;
        for i in 0..len {
            let mut item = self.items[i];
            if keep(&mut item) {
                self.items[kept] = item;
                kept += 1;
            }
        }
        for slot in &mut self.items[kept..len] {
            *slot = T::default();
        }
        self.len = u8::try_from(kept).unwrap_or(u8::MAX);
    }
}

impl<T: Copy + Default, const N: usize> Default for Bounded<T, N> {
    fn default() -> Self {
        Bounded {
            len: 0,
            items: [T::default(); N],
        }
    }
}

impl<T: Copy + Default, const N: usize> Deref for Bounded<T, N> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        &self.items[..usize::from(self.len)]
    }
}

impl<T: Copy + Default, const N: usize> DerefMut for Bounded<T, N> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.items[..usize::from(self.len)]
    }
}

impl<T: Copy + Default, const N: usize> FromIterator<T> for Bounded<T, N> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut list = Bounded::default();
        for item in iter {
            list.push(item);
        }
        list
    }
}

impl<T: Copy + Default + PartialEq, const N: usize> PartialEq for Bounded<T, N> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: Copy + Default + Eq, const N: usize> Eq for Bounded<T, N> {}

impl<T: Copy + Default + Hash, const N: usize> Hash for Bounded<T, N> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (**self).hash(state);
    }
}

impl<T: Copy + Default + fmt::Debug, const N: usize> fmt::Debug for Bounded<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Gathers a value's `Hash` stream (the calls its derived `Hash` makes, field by field) as
/// bytes, small integers in one byte each, and hands them to the hasher in blocks.
///
/// The checker identifies a state by a 64-bit hash of it. Fed field by field, its hasher does
/// one multiplication per field, one after the other; fed the same stream as bytes, it does a
/// few per 16 bytes. The bytes say everything the stream says (an integer of 255 or more is
/// written as a marker byte and its eight bytes; what each byte is follows from the type and
/// the bytes before it), so two values of one type give the same bytes exactly when their
/// `Hash` streams are the same: the fingerprint tells apart the states it told apart before,
/// up to the same 64-bit collisions.
pub struct Packed<'a, H: Hasher> {
    out: &'a mut H,
    buf: [u8; 64],
    len: usize,
}

impl<'a, H: Hasher> Packed<'a, H> {
    /// A stream into `out`; call [`Packed::flush`] at its end.
    #[inline(always)]
    pub fn new(out: &'a mut H) -> Self {
        Packed {
            out,
            buf: [0; 64],
            len: 0,
        }
    }

    #[inline(always)]
    fn byte(&mut self, b: u8) {
        if self.len == self.buf.len() {
            self.hand_over();
        }
        self.buf[self.len] = b;
        self.len += 1;
    }

    /// A full block to the hasher (out of line: `byte` stays small enough to inline).
    #[cold]
    #[inline(never)]
    fn hand_over(&mut self) {
        self.out.write(&self.buf);
        self.len = 0;
    }

    /// Hand the bytes gathered since the last block to the hasher.
    #[inline(always)]
    pub fn flush(self) {
        self.out.write(&self.buf[..self.len]);
    }
}

impl<H: Hasher> Hasher for Packed<'_, H> {
    #[inline(always)]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    #[inline(always)]
    fn write_u8(&mut self, b: u8) {
        self.byte(b);
    }

    #[inline(always)]
    fn write_usize(&mut self, n: usize) {
        match u8::try_from(n) {
            Ok(b) if b < u8::MAX => self.byte(b),
            _ => {
                self.byte(u8::MAX);
                self.write(&(n as u64).to_le_bytes());
            }
        }
    }

    #[inline(always)]
    fn write_isize(&mut self, n: isize) {
        // Enum discriminants and lengths arrive here: small and not negative.
        self.write_usize(n as usize);
    }

    /// Not a hash: [`Packed`] only carries a stream to the hasher it was given.
    fn finish(&self) -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::DefaultHasher;

    fn packed<T: Hash>(value: &T) -> u64 {
        let mut h = DefaultHasher::new();
        let mut p = Packed::new(&mut h);
        value.hash(&mut p);
        p.flush();
        h.finish()
    }

    #[test]
    fn a_bounded_list_compares_and_hashes_only_its_items() {
        let mut a: Bounded<u8, 4> = [1, 2, 3].into_iter().collect();
        a.remove(1);
        let b: Bounded<u8, 4> = [1, 3].into_iter().collect();
        assert_eq!(a, b);
        assert_eq!(packed(&a), packed(&b));
        let mut c: Bounded<u8, 4> = [1, 3, 4].into_iter().collect();
        c.retain_mut(|x| *x != 4);
        assert_eq!(c, b);
        assert_eq!(packed(&c), packed(&b));
        assert_ne!(packed(&c), packed(&Bounded::<u8, 4>::default()));
    }

    #[test]
    fn the_packed_stream_tells_apart_what_the_fields_do() {
        // Long enough to be handed over in several blocks.
        let long: Vec<u16> = (0..100).collect();
        let mut other = long.clone();
        other[99] = 1000;
        assert_ne!(packed(&long), packed(&other));
        assert_ne!(
            packed(&(Some(1u8), None::<u8>)),
            packed(&(None::<u8>, Some(1u8)))
        );
        assert_ne!(
            packed(&[300usize]),
            packed(&[255usize, 0, 0, 0, 0, 0, 0, 0, 0])
        );
        assert_eq!(packed(&long), packed(&long.clone()));
    }
}
