//! One goal to create, as brief derivation yields it, and the limits every
//! derivation mode ([`super::brief`] and [`super::stories`]) enforces.

use super::error::{ErrorKind, GoalError};

/// Longest accepted bullet, in characters.
pub(crate) const MAX_BULLET_CHARS: usize = 1200;

/// One goal to create: its title and objective.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The goal title.
    pub title: String,
    /// The goal objective.
    pub objective: String,
}

/// `ULW_LOOP_BRIEF_ITEM_TOO_LONG` for 1-based brief line `line`.
pub(crate) fn too_long(line: usize, length: usize) -> GoalError {
    GoalError::new(
        ErrorKind::BriefItemTooLong {
            line,
            length,
            max: MAX_BULLET_CHARS,
        },
        format!(
            "Brief line {line} is a bullet of {length} characters; the limit is {MAX_BULLET_CHARS}. Split it into several bullets."
        ),
    )
}

/// `ULW_LOOP_BRIEF_TOO_MANY_GOALS`: more implicit goals than the profile allows.
pub(crate) fn too_many(count: usize, max: u32) -> GoalError {
    GoalError::new(
        ErrorKind::BriefTooManyGoals { count, max },
        format!(
            "The brief would make {count} goals without a Stories or Goals section; at most {max} are derived implicitly. Pass the stories as repeated --goal \"Title::Objective\", or put at most {max} parent stories under a `### Stories` (or `### Goals`) heading."
        ),
    )
}
