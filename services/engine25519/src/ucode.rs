//! Microcode RAM manager: places programs in the engine's 1024-word microcode RAM, deduplicates
//! them by content (hash, then full compare) so each program is loaded once, and evicts the least
//! recently used unpinned program that no queued job references when space runs out.
//! No Xous dependency.

use crate::api::UCODE_WORDS;

pub use crate::api::content_hash;

#[derive(Debug, Clone)]
pub struct Program {
    pub start: usize,
    pub words: Vec<u32>,
    pub hash: u64,
    pub gen: u16,
    pub pinned: bool,
    /// jobs queued or running that use this program
    pub refs: u32,
    pub last_use: u64,
}

/// Loaded programs; a handle is `slot << 16 | generation` (never 0).
pub struct Ucode {
    slots: Vec<Option<Program>>,
    gen: u16,
    clock: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadError {
    /// length 0 or > UCODE_WORDS
    BadLength,
    /// no contiguous free space even after evicting idle programs
    NoSpace,
}

/// What `load` did (the caller must write the words to the engine when `fresh`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loaded {
    pub handle: u32,
    pub start: usize,
    pub fresh: bool,
}

pub const MAX_PROGRAMS: usize = 64;

impl Default for Ucode {
    fn default() -> Self {
        Self::new()
    }
}

impl Ucode {
    pub fn new() -> Self {
        Ucode { slots: vec![None; MAX_PROGRAMS], gen: 0, clock: 0 }
    }

    pub fn get(&self, handle: u32) -> Option<&Program> {
        let slot = (handle >> 16) as usize;
        let gen = (handle & 0xFFFF) as u16;
        self.slots.get(slot)?.as_ref().filter(|p| p.gen == gen && handle != 0)
    }

    fn get_mut(&mut self, handle: u32) -> Option<&mut Program> {
        let slot = (handle >> 16) as usize;
        let gen = (handle & 0xFFFF) as u16;
        self.slots.get_mut(slot)?.as_mut().filter(|p| p.gen == gen && handle != 0)
    }

    pub fn count(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }

    /// Find or place `words`. Pinned programs are never evicted.
    pub fn load(&mut self, words: &[u32], pinned: bool) -> Result<Loaded, LoadError> {
        if words.is_empty() || words.len() > UCODE_WORDS {
            return Err(LoadError::BadLength);
        }
        self.clock += 1;
        let hash = content_hash(words);
        let clock = self.clock;
        for (i, s) in self.slots.iter_mut().enumerate() {
            if let Some(p) = s {
                if p.hash == hash && p.words == words {
                    p.last_use = clock;
                    p.pinned |= pinned;
                    return Ok(Loaded { handle: (i as u32) << 16 | p.gen as u32, start: p.start, fresh: false });
                }
            }
        }
        loop {
            let slot = self.slots.iter().position(|s| s.is_none());
            let start = self.find_space(words.len());
            if let (Some(slot), Some(start)) = (slot, start) {
                self.gen = self.gen.wrapping_add(1).max(1);
                let gen = self.gen;
                self.slots[slot] =
                    Some(Program { start, words: words.to_vec(), hash, gen, pinned, refs: 0, last_use: clock });
                return Ok(Loaded { handle: (slot as u32) << 16 | gen as u32, start, fresh: true });
            }
            // evict the least recently used idle program
            let victim = self
                .slots
                .iter()
                .enumerate()
                .filter_map(|(i, s)| s.as_ref().map(|p| (i, p)))
                .filter(|(_, p)| !p.pinned && p.refs == 0)
                .min_by_key(|(_, p)| p.last_use)
                .map(|(i, _)| i);
            match victim {
                Some(i) => self.slots[i] = None,
                None => return Err(LoadError::NoSpace),
            }
        }
    }

    fn find_space(&self, len: usize) -> Option<usize> {
        let mut used: Vec<(usize, usize)> =
            self.slots.iter().flatten().map(|p| (p.start, p.start + p.words.len())).collect();
        used.sort();
        let mut at = 0;
        for (s, e) in used {
            if s >= at + len {
                return Some(at);
            }
            at = at.max(e);
        }
        if at + len <= UCODE_WORDS {
            Some(at)
        } else {
            None
        }
    }

    /// A job referencing `handle` was queued: keep the program resident. Returns (start, len).
    pub fn acquire(&mut self, handle: u32) -> Option<(usize, usize)> {
        self.clock += 1;
        let clock = self.clock;
        let p = self.get_mut(handle)?;
        p.refs += 1;
        p.last_use = clock;
        Some((p.start, p.words.len()))
    }

    pub fn release(&mut self, handle: u32) {
        if let Some(p) = self.get_mut(handle) {
            p.refs = p.refs.saturating_sub(1);
        }
    }

    /// Every resident program (to rewrite microcode RAM after a reset/resume).
    pub fn programs(&self) -> impl Iterator<Item = &Program> {
        self.slots.iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dedup_by_content() {
        let mut u = Ucode::new();
        let a = u.load(&[1, 2, 3], false).unwrap();
        assert!(a.fresh);
        let b = u.load(&[1, 2, 3], false).unwrap();
        assert!(!b.fresh);
        assert_eq!(a.handle, b.handle);
        let c = u.load(&[1, 2, 4], false).unwrap();
        assert_ne!(c.handle, a.handle);
        assert_eq!(c.start, 3);
        assert_eq!(u.load(&[], false).unwrap_err(), LoadError::BadLength);
        assert_eq!(u.load(&vec![0; UCODE_WORDS + 1], false).unwrap_err(), LoadError::BadLength);
    }

    #[test]
    fn evicts_lru_idle_but_not_pinned_or_referenced() {
        let mut u = Ucode::new();
        let pinned = u.load(&vec![7; 200], true).unwrap();
        let busy = u.load(&vec![8; 400], false).unwrap();
        u.acquire(busy.handle).unwrap();
        let idle = u.load(&vec![9; 400], false).unwrap();
        // 1000 words used: 300 more need an eviction, only `idle` may go
        let n = u.load(&vec![10; 300], false).unwrap();
        assert!(u.get(idle.handle).is_none(), "idle program evicted");
        assert!(u.get(pinned.handle).is_some() && u.get(busy.handle).is_some());
        assert_eq!(u.acquire(idle.handle), None, "stale handle rejected");
        assert_eq!(n.start, 600);
        // nothing evictable left for a full-size program
        assert_eq!(u.load(&vec![11; 1024], false).unwrap_err(), LoadError::NoSpace);
        u.release(busy.handle);
        assert!(u.get(0).is_none());
    }
}
