//! The slab's storage: a vector of fixed-size chunks instead of one vector,
//! so a big set never over-allocates by up to half (a doubling vector's
//! waste) and never copies all its entries to grow (which through Redis's
//! allocator would be a multi-millisecond stall at a million members).
//! Small sets still live in one small vector: only the first chunk grows by
//! doubling.

use std::ops::{Index, IndexMut};

/// Entries per chunk.
const CHUNK: usize = 1024;

/// An indexable, growable sequence stored in chunks of [`CHUNK`] entries.
#[derive(Clone, Debug)]
pub(super) struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Chunked<T> {
    /// Number of entries. O(1).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Appends `value`. O(1); allocates a whole chunk at a chunk boundary.
    pub fn push(&mut self, value: T) {
        match self.chunks.last_mut() {
            Some(last) if last.len() < CHUNK => last.push(value),
            _ => {
                let mut chunk = Vec::with_capacity(if self.chunks.is_empty() { 4 } else { CHUNK });
                chunk.push(value);
                self.chunks.push(chunk);
            }
        }
        self.len += 1;
    }

    /// Removes the last entry. O(1).
    pub fn pop(&mut self) -> Option<T> {
        let last = self.chunks.last_mut()?;
        let value = last.pop();
        if last.is_empty() {
            self.chunks.pop();
        }
        self.len -= 1;
        value
    }

    /// The last entry.
    pub fn last(&self) -> Option<&T> {
        self.chunks.last().and_then(|c| c.last())
    }

    /// The entry at `i`, if any.
    pub fn get(&self, i: usize) -> Option<&T> {
        self.chunks.get(i / CHUNK).and_then(|c| c.get(i % CHUNK))
    }

    /// Every entry in order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flatten()
    }

    /// Heap bytes held, as the allocator rounds them.
    pub fn heap_bytes(&self) -> usize {
        let entry = std::mem::size_of::<T>();
        super::member::allocation_size(self.chunks.capacity() * std::mem::size_of::<Vec<T>>())
            + self
                .chunks
                .iter()
                .map(|c| super::member::allocation_size(c.capacity() * entry))
                .sum::<usize>()
    }
}

impl<T> Index<usize> for Chunked<T> {
    type Output = T;

    fn index(&self, i: usize) -> &T {
        &self.chunks[i / CHUNK][i % CHUNK]
    }
}

impl<T> IndexMut<usize> for Chunked<T> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.chunks[i / CHUNK][i % CHUNK]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_like_a_vec_across_chunk_boundaries() {
        let mut c = Chunked::default();
        let mut v = Vec::new();
        for i in 0..3 * CHUNK + 7 {
            c.push(i);
            v.push(i);
        }
        assert_eq!(c.len(), v.len());
        assert!(c.iter().eq(v.iter()));
        c[CHUNK] = 99;
        assert_eq!(c.get(CHUNK), Some(&99));
        for _ in 0..2 * CHUNK + 10 {
            assert_eq!(c.pop(), v.pop().map(|x| if x == CHUNK { 99 } else { x }));
        }
        assert_eq!(c.len(), v.len());
        assert_eq!(c.last(), v.last());
        while c.pop().is_some() {}
        assert!(c.len() == 0 && c.chunks.is_empty());
    }
}
