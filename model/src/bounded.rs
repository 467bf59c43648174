//! The state's lists held inline: the checker clones, hashes and drops every state it
//! generates (several per unique state), so a state without heap allocations is cheaper.

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::DefaultHasher;

    fn hashed<T: Hash>(value: &T) -> u64 {
        let mut h = DefaultHasher::new();
        value.hash(&mut h);
        h.finish()
    }

    #[test]
    fn a_bounded_list_compares_and_hashes_only_its_items() {
        let mut a: Bounded<u8, 4> = [1, 2, 3].into_iter().collect();
        a.remove(1);
        let b: Bounded<u8, 4> = [1, 3].into_iter().collect();
        assert_eq!(a, b);
        assert_eq!(hashed(&a), hashed(&b));
        let mut c: Bounded<u8, 4> = [1, 3, 4].into_iter().collect();
        c.retain_mut(|x| *x != 4);
        assert_eq!(c, b);
        assert_eq!(hashed(&c), hashed(&b));
        assert_ne!(hashed(&c), hashed(&Bounded::<u8, 4>::default()));
    }
}
