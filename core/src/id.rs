//! Run identifiers.

use std::fmt;
use std::str::FromStr;

/// The identifier of a run: a time-ordered UUIDv7, written as 32 lowercase hex digits without
/// dashes.
///
/// Time-ordered ids keep a run's journal keys next to the keys of runs started at the same time,
/// so batched commits touch few pages, and listing runs newest first is a reverse key scan.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunId(u128);

impl RunId {
    /// A fresh, time-ordered run id.
    pub fn new() -> Self {
        RunId(uuid::Uuid::now_v7().as_u128())
    }

    /// The id as a 128-bit integer (its big-endian byte order is its sort order).
    pub fn as_u128(self) -> u128 {
        self.0
    }

    /// Rebuilds an id from [`RunId::as_u128`].
    pub fn from_u128(v: u128) -> Self {
        RunId(v)
    }

    /// The id's 16 bytes, big-endian.
    pub fn to_bytes(self) -> [u8; 16] {
        self.0.to_be_bytes()
    }

    /// When the id was made, in milliseconds since the Unix epoch: the time a UUIDv7 carries
    /// ([`RunId::new`]); `None` for an id of another kind.
    pub fn made_at_ms(self) -> Option<u64> {
        let id = uuid::Uuid::from_u128(self.0);
        (id.get_version_num() == 7).then_some((self.0 >> 80) as u64)
    }
}

impl Default for RunId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl fmt::Debug for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RunId({self})")
    }
}

/// The error returned when a string is not a 32-hex run id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("[MAG-ID001] `{0}` is not a run id: expected 32 hex digits (a UUID without dashes)")]
pub struct ParseRunIdError(pub String);

impl FromStr for RunId {
    type Err = ParseRunIdError;

    /// Accepts 32 hex digits; a dashed UUID is accepted too and normalised.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let hex: String = s.chars().filter(|c| *c != '-').collect();
        if hex.len() != 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(ParseRunIdError(s.to_string()));
        }
        u128::from_str_radix(&hex, 16)
            .map(RunId)
            .map_err(|_| ParseRunIdError(s.to_string()))
    }
}

impl serde::Serialize for RunId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for RunId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_id_carries_the_time_it_was_made() {
        let now = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis() as u64
        };
        let before = now();
        let made = RunId::new().made_at_ms().unwrap();
        assert!((before..=now()).contains(&made), "{before} <= {made}");
        let v4 = RunId::from_u128(uuid::Uuid::new_v4().as_u128());
        assert_eq!(
            v4.made_at_ms(),
            None,
            "an id of another kind carries no time"
        );
    }

    #[test]
    fn display_is_32_hex_and_round_trips() {
        let id = RunId::new();
        let s = id.to_string();
        assert_eq!(s.len(), 32);
        assert!(
            s.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_eq!(s.parse::<RunId>().unwrap(), id);
    }

    #[test]
    fn ids_are_time_ordered() {
        let a = RunId::new();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = RunId::new();
        assert!(a < b);
    }

    #[test]
    fn rejects_garbage_with_a_coded_message() {
        let err = "xyz".parse::<RunId>().unwrap_err();
        assert!(err.to_string().contains("[MAG-ID001]"));
    }
}
