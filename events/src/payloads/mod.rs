//! Typed payloads, one struct per event kind, grouped by domain.
//!
//! Every payload derives serde (the JSON codec, with unknown fields rejected)
//! and rkyv (the binary codec). Money is `rust_decimal::Decimal` — a JSON
//! string such as `"0.0012"` — never a float.

/// Derives shared by every payload type: serde with unknown fields rejected,
/// and rkyv.
macro_rules! payload {
    ($(#[$meta:meta])* pub struct $name:ident { $($body:tt)* }) => {
        $(#[$meta])*
        #[derive(
            Clone, Debug, PartialEq,
            serde::Serialize, serde::Deserialize,
            rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
        )]
        #[serde(deny_unknown_fields)]
        pub struct $name { $($body)* }
    };
}

/// Derives shared by closed string-valued enums: snake_case in JSON, a
/// one-byte tag in rkyv.
macro_rules! closed_enum {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord,
            serde::Serialize, serde::Deserialize,
            rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
        )]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The value's name as it appears in JSON.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(format!(
                        "unknown value {s:?} (expected one of: {})",
                        [$($text),+].join(", ")
                    )),
                }
            }
        }
    };
}

pub(crate) use closed_enum;

mod common;
mod fast_path;
mod memory;
mod pattern;
mod session;
mod stream;
mod turn;

pub use common::*;
pub use fast_path::*;
pub use memory::*;
pub use pattern::*;
pub use session::*;
pub use stream::*;
pub use turn::*;
