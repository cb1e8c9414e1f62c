//! Byte and substring searches that never probe the CPU.
//!
//! `memchr`'s top-level functions pick AVX2 at their first call, and asking
//! costs a full CPU feature detection: a dozen `cpuid` instructions, each a
//! trap to the hypervisor in a virtual machine (9 µs apiece on the 2-core
//! machine of docs/performance.md, about 0.12 ms per process). A hook or
//! command searches kilobytes to a few megabytes, where SSE2 — part of the
//! x86-64 baseline, so known at compile time — is as fast as it needs to be.
//! Other targets use `memchr`'s portable routines, which probe nothing.

/// The first `byte` in `hay`.
pub(crate) fn find_byte(byte: u8, hay: &[u8]) -> Option<usize> {
    imp::find_byte(byte, hay)
}

/// The last `byte` in `hay`.
pub(crate) fn rfind_byte(byte: u8, hay: &[u8]) -> Option<usize> {
    imp::rfind_byte(byte, hay)
}

/// Every `byte` in `hay`, in order.
pub(crate) fn byte_positions(byte: u8, hay: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let mut from = 0;
    std::iter::from_fn(move || {
        let at = from + find_byte(byte, hay.get(from..)?)?;
        from = at + 1;
        Some(at)
    })
}

/// A substring searcher built once for its needle.
#[derive(Debug, Clone)]
pub(crate) struct Finder {
    needle: Vec<u8>,
    imp: imp::Finder,
}

impl Finder {
    /// A searcher for `needle`.
    pub(crate) fn new(needle: &[u8]) -> Finder {
        Finder {
            needle: needle.to_vec(),
            imp: imp::Finder::new(needle),
        }
    }

    /// The first occurrence of the needle in `hay`.
    pub(crate) fn find(&self, hay: &[u8]) -> Option<usize> {
        self.imp.find(hay, &self.needle)
    }

    /// Every non-overlapping occurrence of the needle in `hay`, in order
    /// (an empty needle matches at every position).
    pub(crate) fn find_iter<'a>(&'a self, hay: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
        let mut from = 0;
        std::iter::from_fn(move || {
            let at = from + self.find(hay.get(from..)?)?;
            from = at + self.needle.len().max(1);
            Some(at)
        })
    }
}

/// The first occurrence of `needle` in `hay`.
pub(crate) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    Finder::new(needle).find(hay)
}

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod imp {
    use memchr::arch::all::rabinkarp;
    use memchr::arch::x86_64::sse2::{memchr::One, packedpair};

    fn one(byte: u8) -> One {
        One::new(byte).expect("SSE2 is enabled at compile time")
    }

    pub(super) fn find_byte(byte: u8, hay: &[u8]) -> Option<usize> {
        one(byte).find(hay)
    }

    pub(super) fn rfind_byte(byte: u8, hay: &[u8]) -> Option<usize> {
        one(byte).rfind(hay)
    }

    /// The SSE2 packed-pair searcher where the needle allows one, with
    /// Rabin-Karp for short haystacks and needles.
    #[derive(Debug, Clone)]
    pub(super) struct Finder {
        packed: Option<packedpair::Finder>,
        rk: rabinkarp::Finder,
    }

    impl Finder {
        pub(super) fn new(needle: &[u8]) -> Finder {
            Finder {
                packed: packedpair::Finder::new(needle),
                rk: rabinkarp::Finder::new(needle),
            }
        }

        pub(super) fn find(&self, hay: &[u8], needle: &[u8]) -> Option<usize> {
            match &self.packed {
                Some(p) if hay.len() >= p.min_haystack_len() => p.find(hay, needle),
                _ => self.rk.find(hay, needle),
            }
        }
    }
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
mod imp {
    use memchr::arch::all::{memchr::One, twoway};

    pub(super) fn find_byte(byte: u8, hay: &[u8]) -> Option<usize> {
        One::new(byte).find(hay)
    }

    pub(super) fn rfind_byte(byte: u8, hay: &[u8]) -> Option<usize> {
        One::new(byte).rfind(hay)
    }

    #[derive(Debug, Clone)]
    pub(super) struct Finder(twoway::Finder);

    impl Finder {
        pub(super) fn new(needle: &[u8]) -> Finder {
            Finder(twoway::Finder::new(needle))
        }

        pub(super) fn find(&self, hay: &[u8], needle: &[u8]) -> Option<usize> {
            self.0.find(hay, needle)
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // memchr's own searches are the oracle
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive(hay: &[u8], needle: &[u8]) -> Vec<usize> {
        let mut out = Vec::new();
        let mut i = 0;
        while i + needle.len() <= hay.len() {
            if &hay[i..i + needle.len()] == needle {
                out.push(i);
                i += needle.len().max(1);
            } else {
                i += 1;
            }
        }
        out
    }

    #[test]
    fn searches_agree_with_memchr_on_the_edges() {
        let hay = b"{\"a\":1,\n\"lastMutation\":{},\n\"b\":\"lastMutation\"}\n";
        for needle in [&b"lastMutation"[..], b"\n", b"x", b"", b"\"b\"", b"}\n"] {
            assert_eq!(
                find(hay, needle),
                memchr::memmem::find(hay, needle),
                "{needle:?}"
            );
            let f = Finder::new(needle);
            assert_eq!(
                f.find_iter(hay).collect::<Vec<_>>(),
                memchr::memmem::find_iter(hay, needle).collect::<Vec<_>>(),
                "{needle:?}"
            );
        }
        assert_eq!(find_byte(b'\n', hay), memchr::memchr(b'\n', hay));
        assert_eq!(rfind_byte(b'\n', hay), memchr::memrchr(b'\n', hay));
        assert_eq!(
            byte_positions(b'\n', hay).collect::<Vec<_>>(),
            memchr::memchr_iter(b'\n', hay).collect::<Vec<_>>()
        );
        assert_eq!(find_byte(b'q', b""), None);
        assert_eq!(rfind_byte(b'q', b""), None);
        assert_eq!(find(b"", b"ab"), None);
    }

    proptest! {
        #[test]
        fn substring_search_finds_what_a_naive_scan_finds(
            hay in proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'\n'), any::<u8>()], 0..300),
            needle in proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'\n')], 0..6),
        ) {
            let f = Finder::new(&needle);
            prop_assert_eq!(f.find_iter(&hay).collect::<Vec<_>>(), naive(&hay, &needle));
            prop_assert_eq!(find(&hay, &needle), naive(&hay, &needle).first().copied());
        }

        #[test]
        fn byte_search_finds_what_a_naive_scan_finds(
            hay in proptest::collection::vec(prop_oneof![Just(b'\n'), any::<u8>()], 0..300),
        ) {
            let all: Vec<usize> = (0..hay.len()).filter(|&i| hay[i] == b'\n').collect();
            prop_assert_eq!(byte_positions(b'\n', &hay).collect::<Vec<_>>(), all.clone());
            prop_assert_eq!(find_byte(b'\n', &hay), all.first().copied());
            prop_assert_eq!(rfind_byte(b'\n', &hay), all.last().copied());
        }
    }
}
