//! Plan/ledger agreement, the "compare" step of the recovery check
//! (goal-engine.md §2.8), reported as `LEDGER_BEHIND_PLAN` (recoverable) or
//! `LEDGER_PLAN_MISMATCH` (§2.5.4).

use super::plan_file::LastMutation;

/// Plan/ledger agreement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Consistency {
    /// Plan revision equals the ledger's and nothing is missing.
    Ok,
    /// The ledger lacks `missing` entries the plan's `lastMutation` carries.
    Recoverable { missing: u64 },
    /// Unrecoverable divergence.
    Mismatch,
}

/// The ledger side of the comparison.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LedgerHead {
    /// `seq` of the last chained record (0: none).
    pub(crate) last_seq: u64,
    /// `revision` of the last chained record (0: none).
    pub(crate) last_revision: u64,
}

/// Compares plan revision `rp` and its `lastMutation` with the ledger head.
/// `landed` is the number of `lastMutation` entries present in the ledger
/// (records with `seq ≥ fromSeq` and `revision = lastMutation.revision`,
/// repair entries excluded).
pub(crate) fn assess(
    rp: u64,
    lm: Option<LastMutation>,
    head: LedgerHead,
    landed: u64,
) -> Consistency {
    let rl = head.last_revision;
    let missing = |lm: LastMutation| lm.entries.saturating_sub(landed);
    if rp == rl {
        match lm {
            Some(lm)
                if lm.revision == rp
                    && lm.entries > 0
                    && head.last_seq < lm.from_seq + lm.entries - 1
                    && missing(lm) > 0 =>
            {
                Consistency::Recoverable {
                    missing: missing(lm),
                }
            }
            _ => Consistency::Ok,
        }
    } else if let Some(lm) = lm
        && rp == rl + 1
        && lm.revision == rp
    {
        Consistency::Recoverable {
            missing: missing(lm),
        }
    } else {
        Consistency::Mismatch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(last_seq: u64, last_revision: u64) -> LedgerHead {
        LedgerHead {
            last_seq,
            last_revision,
        }
    }

    fn lm(revision: u64, from_seq: u64, entries: u64) -> Option<LastMutation> {
        Some(LastMutation {
            revision,
            from_seq,
            entries,
        })
    }

    #[test]
    fn the_compare_step_of_the_recovery_check() {
        assert_eq!(assess(0, None, head(0, 0), 0), Consistency::Ok);
        assert_eq!(assess(3, lm(3, 5, 2), head(6, 3), 2), Consistency::Ok);
        assert_eq!(
            assess(3, lm(3, 5, 3), head(6, 3), 2),
            Consistency::Recoverable { missing: 1 }
        );
        assert_eq!(
            assess(4, lm(4, 7, 2), head(6, 3), 0),
            Consistency::Recoverable { missing: 2 }
        );
        assert_eq!(assess(4, lm(3, 5, 2), head(6, 3), 0), Consistency::Mismatch);
        assert_eq!(assess(5, lm(5, 7, 1), head(6, 3), 0), Consistency::Mismatch);
        assert_eq!(assess(2, lm(2, 3, 1), head(6, 3), 0), Consistency::Mismatch);
        assert_eq!(assess(1, None, head(0, 0), 0), Consistency::Mismatch);
        assert_eq!(
            assess(1, lm(1, 1, 1), head(0, 0), 0),
            Consistency::Recoverable { missing: 1 }
        );
    }
}
