//! Wire enumerations: the closed sets of strings the tool writes to and
//! reads from its state files and ledgers (statuses, ledger kinds, steering
//! kinds), each one Rust enum shared by the writers and the readers, so a
//! misspelt value cannot be written or silently skipped.

macro_rules! wire_enum {
    ($(#[$m:meta])* $vis:vis $name:ident { $($variant:ident = $wire:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name {
            $(
                #[doc = concat!("`", $wire, "`")]
                $variant,
            )*
        }

        impl $name {
            /// Every value, in wire order.
            #[allow(dead_code)]
            $vis const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The wire string.
            $vis const fn as_str(self) -> &'static str {
                match self { $($name::$variant => $wire,)* }
            }

            /// Parses the wire string.
            #[allow(dead_code)]
            $vis fn parse(s: &str) -> Option<$name> {
                match s { $($wire => Some($name::$variant),)* _ => None }
            }

            /// The wire names, in order.
            #[allow(dead_code)]
            $vis fn names() -> Vec<&'static str> {
                Self::ALL.iter().map(|v| v.as_str()).collect()
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    };
}

/// Shared by every wire enumeration (plan, steering, goal and gate ledgers).
pub(crate) use wire_enum;
