//! A cron pattern in a time zone: which instants it fires at, by the rule of the module docs.
//!
//! croner finds the wall-clock times a pattern matches; jiff's zone database maps each to the
//! instant it fires at. Matching runs on civil (zone-less) times, so a pattern means the same
//! in every zone; only the mapping knows about daylight saving.

use std::fmt;
use std::str::FromStr;

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::civil::DateTime;
use jiff::tz::{AmbiguousOffset, Offset, TimeZone};
use jiff::{SignedDuration, Timestamp};

/// Offsets are sampled this far around an instant to bound where its wall-clock time may lie:
/// zones change their offset at most once in such a span.
const NEAR: SignedDuration = SignedDuration::from_hours(6);

/// A parsed cron pattern and the zone its wall-clock times are read in.
#[derive(Clone)]
pub(crate) struct CronTicks {
    expression: String,
    cron: Cron,
    zone_name: String,
    zone: TimeZone,
}

impl fmt::Debug for CronTicks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CronTicks")
            .field("expression", &self.expression)
            .field("zone", &self.zone_name)
            .finish_non_exhaustive()
    }
}

/// Why a pattern does not parse, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PatternError {
    /// What is wrong and what was expected.
    pub(crate) message: String,
    /// The character offset of the field at fault in the pattern, when one field is.
    pub(crate) offset: Option<usize>,
}

const FIVE: [&str; 5] = ["minute", "hour", "day-of-month", "month", "day-of-week"];
const SIX: [&str; 6] = [
    "second",
    "minute",
    "hour",
    "day-of-month",
    "month",
    "day-of-week",
];

/// The whitespace-separated fields of `expression`, each with its offset in characters.
fn fields(expression: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start: Option<(usize, usize)> = None;
    for (chars, (byte, c)) in expression.char_indices().enumerate() {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some((byte, chars)),
            (true, Some((from, offset))) => {
                out.push((offset, &expression[from..byte]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some((from, offset)) = start {
        out.push((offset, &expression[from..]));
    }
    out
}

fn parser() -> CronParser {
    CronParser::builder()
        .seconds(Seconds::Optional)
        .year(Year::Disallowed)
        .build()
}

/// Parses a pattern of 5 fields (minute first) or 6 (seconds first); the error says why not
/// and, when one field is at fault, which.
pub(crate) fn parse_pattern(expression: &str) -> Result<Cron, PatternError> {
    let fields = fields(expression);
    let names: &[&str] = match fields.len() {
        5 => &FIVE,
        6 => &SIX,
        n => {
            return Err(PatternError {
                message: format!(
                    "it has {n} field(s): expected 5 (minute hour day-of-month month \
                     day-of-week) or 6 (with seconds first)"
                ),
                offset: None,
            });
        }
    };
    let whole = match parser().parse(expression) {
        Ok(cron) => return Ok(cron),
        Err(e) => e.to_string(),
    };
    // croner does not say which field it refused: try each alone among wildcards.
    for (i, (offset, field)) in fields.iter().enumerate() {
        let alone: Vec<&str> = (0..fields.len())
            .map(|j| if j == i { *field } else { "*" })
            .collect();
        if let Err(e) = parser().parse(&alone.join(" ")) {
            let why = backwards(field).map_or_else(
                || in_our_words(&e.to_string()),
                |range| {
                    format!("the range '{range}' runs backwards (write the lower number first)")
                },
            );
            return Err(PatternError {
                message: format!(
                    "the {} field '{field}' is refused: {why}; expected {}",
                    names[i],
                    expected_of(names[i])
                ),
                offset: Some(*offset),
            });
        }
    }
    Err(PatternError {
        message: in_our_words(&whole),
        offset: None,
    })
}

/// What a field of `name` takes, for a message that says what was expected.
fn expected_of(name: &str) -> &'static str {
    match name {
        "second" | "minute" => "0-59, a list (1,2), a range (1-5), * or a step (*/5, steps from 1)",
        "hour" => "0-23, a list (1,2), a range (1-5), * or a step (*/5, steps from 1)",
        "day-of-month" => "1-31, L, a list, a range, *, ? or a step (*/5, steps from 1)",
        "month" => "1-12 or JAN-DEC, a list, a range, * or a step (*/3, steps from 1)",
        _ => "0-7 (0 and 7 are Sunday) or SUN-SAT, a list, a range, *, ?, L or # (MON#2)",
    }
}

/// The zone named `name` from the compiled-in IANA database.
pub(crate) fn zone(name: &str) -> Option<TimeZone> {
    TimeZone::get(name).ok()
}

/// Whether `cron` matches any wall-clock time at all (a pattern for 30 February never does).
pub(crate) fn ever_matches(cron: &Cron) -> bool {
    // Without a year field every pattern that matches anything matches within 28 years
    // (the calendar repeats); croner gives up on its own search limit otherwise.
    let start = DateTime::constant(2000, 1, 1, 0, 0, 0, 0);
    cron.find_next_occurrence(&start, true)
        .is_ok_and(|t| t.year() <= 2029)
}

impl CronTicks {
    pub(crate) fn new(expression: String, cron: Cron, zone_name: String, zone: TimeZone) -> Self {
        Self {
            expression,
            cron,
            zone_name,
            zone,
        }
    }

    pub(crate) fn expression(&self) -> &str {
        &self.expression
    }

    pub(crate) fn zone_name(&self) -> &str {
        &self.zone_name
    }

    /// The instant (UTC milliseconds) at which the matching wall-clock time `wall` fires: its
    /// only instant; the first of two in a fold; the end of the gap it falls into.
    fn fire_at(&self, wall: DateTime) -> Option<i64> {
        let ts = match self.zone.to_ambiguous_timestamp(wall).offset() {
            AmbiguousOffset::Unambiguous { offset } => offset.to_timestamp(wall).ok()?,
            // `before` is the larger offset of a fold: the earlier instant.
            AmbiguousOffset::Fold { before, .. } => before.to_timestamp(wall).ok()?,
            AmbiguousOffset::Gap { after, .. } => {
                // Read with the later offset, `wall` lies before the shift; the first
                // transition after that instant is the shift.
                let before_shift = after.to_timestamp(wall).ok()?;
                self.zone.following(before_shift).next()?.timestamp()
            }
        };
        Some(ts.as_millisecond())
    }

    fn offset_at(&self, ms: i64, shift: SignedDuration) -> Option<Offset> {
        let ts = Timestamp::from_millisecond(ms).ok()?;
        Some(self.zone.to_offset(ts.checked_add(shift).unwrap_or(ts)))
    }

    /// The first instant strictly after `after_ms` at which the pattern fires.
    pub(crate) fn next_after(&self, after_ms: i64) -> Option<i64> {
        // Every wall-clock time firing after `after_ms` lies at or after `after_ms` read with
        // the smallest offset near it (see the proof in the module docs of `ticks`).
        let low = self
            .offset_at(after_ms, SignedDuration::ZERO)?
            .min(self.offset_at(after_ms, NEAR)?);
        let mut wall = low.to_datetime(Timestamp::from_millisecond(after_ms).ok()?);
        let mut inclusive = true;
        loop {
            wall = self.cron.find_next_occurrence(&wall, inclusive).ok()?;
            inclusive = false;
            let at = self.fire_at(wall)?;
            if at > after_ms {
                return Some(at);
            }
        }
    }
}

impl FromStr for CronTicks {
    type Err = String;

    /// A pattern in UTC, for tests.
    fn from_str(expression: &str) -> Result<Self, String> {
        let cron = parse_pattern(expression).map_err(|e| e.message)?;
        Ok(Self::new(
            expression.to_owned(),
            cron,
            "UTC".to_owned(),
            TimeZone::UTC,
        ))
    }
}

/// The first range of `field` (`5-1`, `5-1/2` in a list) whose first number is the larger.
fn backwards(field: &str) -> Option<&str> {
    field.split(',').find_map(|part| {
        let range = part.split('/').next()?;
        let (from, to) = range.split_once('-')?;
        let (from, to) = (from.parse::<u32>().ok()?, to.parse::<u32>().ok()?);
        (from > to).then_some(range)
    })
}

/// The cron parser's reason without its own labels ("Component error: Number out of
/// bounds", "Pattern contains illegal characters: CronPattern contains illegal character 'X'
/// in part '1-XYZ'").
fn in_our_words(reason: &str) -> String {
    let reason = reason.trim_end_matches('.');
    if reason.contains("out of bounds") {
        return "a number out of range".to_owned();
    }
    if let Some(at) = reason.rfind("illegal character ") {
        // "illegal character 'X' in part '…'": the character is what to fix.
        let rest = &reason[at..];
        let end = rest.find(" in part").unwrap_or(rest.len());
        return format!("an {}", &rest[..end]);
    }
    for label in [
        "Component error: ",
        "Pattern contains illegal characters: ",
        "Invalid pattern: ",
    ] {
        if let Some(tail) = reason.strip_prefix(label) {
            return lower_first(tail);
        }
    }
    lower_first(reason)
}

/// `text` with its first letter in lower case, to stand inside a sentence.
fn lower_first(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map_or_else(String::new, |c| c.to_lowercase().chain(chars).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(text: &str) -> i64 {
        text.parse::<Timestamp>().unwrap().as_millisecond()
    }

    #[test]
    fn five_and_six_fields_parse_and_four_or_seven_do_not() {
        assert!(parse_pattern("0 6 * * *").is_ok());
        assert!(parse_pattern("0 0 6 * * *").is_ok());
        let four = parse_pattern("0 6 * *").unwrap_err();
        assert!(four.message.contains("4 field(s)"), "{four:?}");
        assert_eq!(four.offset, None);
        assert!(parse_pattern("0 0 6 * * * 2026").is_err());
    }

    #[test]
    fn a_refused_field_says_what_it_takes() {
        let e = parse_pattern("61 * * * *").unwrap_err();
        assert!(
            e.message.starts_with("the minute field '61' is refused: ")
                && e.message.ends_with(
                    "; expected 0-59, a list (1,2), a range (1-5), * or a step (*/5, steps from 1)"
                ),
            "{e:?}"
        );
        // In our words, not the parser's labels.
        assert_eq!(
            e.message,
            "the minute field '61' is refused: a number out of range; expected 0-59, a list \
             (1,2), a range (1-5), * or a step (*/5, steps from 1)"
        );
        let e = parse_pattern("0 0 * * MON-XYZ").unwrap_err();
        assert!(
            e.message.starts_with(
                "the day-of-week field 'MON-XYZ' is refused: an illegal character 'X'; "
            ),
            "{e:?}"
        );
        let e = parse_pattern("0 0 * 13 *").unwrap_err();
        assert!(e.message.contains("expected 1-12 or JAN-DEC"), "{e:?}");
        // Both numbers in range, the wrong way round.
        let e = parse_pattern("0 5-1 * * *").unwrap_err();
        assert!(
            e.message.starts_with(
                "the hour field '5-1' is refused: the range '5-1' runs backwards (write the \
                 lower number first); "
            ),
            "{e:?}"
        );
        let e = parse_pattern("0 1,9-3/2 * * *").unwrap_err();
        assert!(
            e.message.contains("the range '9-3' runs backwards"),
            "{e:?}"
        );
        let e = parse_pattern("*/0 * * * *").unwrap_err();
        assert!(e.message.contains("steps from 1"), "{e:?}");
        // What the messages offer is taken.
        for ok in ["0 0 L * *", "0 9 * * MON#2", "0 9 ? * 7", "0 0 1 JAN-MAR *"] {
            assert!(parse_pattern(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn fields_carry_their_character_offsets() {
        assert_eq!(
            fields(" 0\t61  ü *"),
            [(1, "0"), (3, "61"), (7, "ü"), (9, "*")]
        );
        assert!(fields("   ").is_empty());
    }

    #[test]
    fn the_field_at_fault_is_named_with_its_offset() {
        let e = parse_pattern("0  61 * * *").unwrap_err();
        assert!(
            e.message.starts_with("the hour field '61' is refused: "),
            "{e:?}"
        );
        assert_eq!(e.offset, Some(3));
        let e = parse_pattern("*/5 0 6 * * MON-XYZ").unwrap_err();
        assert!(
            e.message.starts_with("the day-of-week field 'MON-XYZ'"),
            "{e:?}"
        );
        assert_eq!(e.offset, Some(12));
    }

    #[test]
    fn a_pattern_for_30_february_never_matches() {
        assert!(!ever_matches(&parse_pattern("0 0 30 2 *").unwrap()));
        assert!(ever_matches(&parse_pattern("0 0 29 2 *").unwrap()));
    }

    #[test]
    fn utc_ticks_step_forward() {
        let c: CronTicks = "*/20 * * * * *".parse().unwrap();
        let t = ms("2026-01-01T00:00:00Z");
        assert_eq!(c.next_after(t), Some(t + 20_000));
        assert_eq!(c.next_after(t - 1), Some(t));
    }

    #[test]
    fn out_of_range_instants_have_no_tick() {
        let c: CronTicks = "* * * * *".parse().unwrap();
        assert_eq!(c.next_after(i64::MAX), None);
    }
}
