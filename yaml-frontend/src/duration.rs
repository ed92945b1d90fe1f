//! Durations of `timer_task`: ISO-8601 (`P7D`, `PT5M30S`, `PT0.5S`, `P1W`, `P1DT2H`) or a
//! shortcut (`7d`, `4h`, `30m`, `45s`, `250ms`, also `2w`).
//!
//! ISO years and months are rejected: they have no fixed length.
//!
//! **Limit.** No duration of a document may exceed [`MAX_DURATION_SECS`] (100 years of 365.25
//! days): validation rejects a longer `duration`, `timeoutSeconds`, `retry.backoffSeconds` or
//! `bounds.maxWallclockSeconds` with the limit in its message, and a duration only known at
//! run time (a template, a tool's parameter) is either rejected the same way
//! ([`parse_duration`]) or clamped to the limit ([`saturating_secs`]). A timer a hundred
//! years away is as good as never; the limit keeps every due time far from overflowing a
//! millisecond timestamp or a `Duration`.

use std::time::Duration;

/// The longest duration a document may give, in seconds: 100 years of 365.25 days.
pub const MAX_DURATION_SECS: u64 = 3_155_760_000;

/// [`MAX_DURATION_SECS`] as a duration.
pub const MAX_DURATION: Duration = Duration::from_secs(MAX_DURATION_SECS);

/// A number of seconds as a duration, clamped to `0..=MAX_DURATION`; NaN and negative values
/// give zero. Never panics, unlike `Duration::from_secs_f64`.
pub fn saturating_secs(secs: f64) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        Duration::ZERO
    } else if secs >= MAX_DURATION_SECS as f64 {
        MAX_DURATION
    } else {
        Duration::from_secs_f64(secs)
    }
}

/// Why a duration text was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DurationError {
    /// The text matches neither form; fix the text.
    #[error(
        "invalid duration '{0}': expected ISO-8601 like 'PT5M30S' or 'P7D', or a shortcut like \
         '7d', '4h', '30m', '45s', '250ms'"
    )]
    Syntax(String),
    /// ISO years or months were used; express them in days or weeks.
    #[error(
        "invalid duration '{0}': years and months have no fixed length; use days (D) or weeks (W)"
    )]
    CalendarUnit(String),
    /// The value is longer than [`MAX_DURATION_SECS`] (100 years); give a shorter one.
    #[error(
        "invalid duration '{0}': longer than the limit of 100 years ({MAX_DURATION_SECS} seconds)"
    )]
    Overflow(String),
}

/// Parses a duration in ISO-8601 or shortcut form.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let t = text.trim();
    let syntax = || DurationError::Syntax(text.to_owned());
    if t.starts_with(['P', 'p']) {
        return parse_iso(t, text);
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(syntax)?;
    let (num, unit) = t.split_at(split);
    let secs = match unit {
        "ms" => 0.001,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        "w" => 604_800.0,
        _ => return Err(syntax()),
    };
    let n = number(num).ok_or_else(syntax)?;
    to_duration(n * secs, text)
}

fn number(s: &str) -> Option<f64> {
    let ok = !s.is_empty()
        && !s.starts_with('.')
        && !s.ends_with('.')
        && s.chars().filter(|c| *c == '.').count() <= 1;
    if ok { s.parse().ok() } else { None }
}

fn to_duration(secs: f64, text: &str) -> Result<Duration, DurationError> {
    if secs > MAX_DURATION_SECS as f64 {
        return Err(DurationError::Overflow(text.to_owned()));
    }
    Duration::try_from_secs_f64(secs).map_err(|_| DurationError::Syntax(text.to_owned()))
}

fn parse_iso(t: &str, text: &str) -> Result<Duration, DurationError> {
    let syntax = || DurationError::Syntax(text.to_owned());
    let mut total = 0.0;
    let mut in_time = false;
    let mut any = false;
    let mut num = String::new();
    // Units must appear in this order; `rank` only grows.
    let mut rank = 0;
    for c in t[1..].chars() {
        match c.to_ascii_uppercase() {
            'T' if !in_time && num.is_empty() => {
                in_time = true;
                rank = 3;
            }
            d if d.is_ascii_digit() || d == '.' => num.push(d),
            u => {
                let (r, secs) = match (in_time, u) {
                    (false, 'Y') | (false, 'M') => {
                        return Err(DurationError::CalendarUnit(text.to_owned()));
                    }
                    (false, 'W') => (1, 604_800.0),
                    (false, 'D') => (2, 86_400.0),
                    (true, 'H') => (4, 3600.0),
                    (true, 'M') => (5, 60.0),
                    (true, 'S') => (6, 1.0),
                    _ => return Err(syntax()),
                };
                if r <= rank && !(r == 1 && rank == 0) {
                    return Err(syntax());
                }
                rank = r;
                total += number(&num).ok_or_else(syntax)? * secs;
                num.clear();
                any = true;
            }
        }
    }
    if !any || !num.is_empty() || (in_time && rank == 3) {
        return Err(syntax());
    }
    to_duration(total, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: &str) -> f64 {
        parse_duration(s).map(|d| d.as_secs_f64()).unwrap_or(-1.0)
    }

    #[test]
    fn iso_forms() {
        assert_eq!(secs("P7D"), 604_800.0);
        assert_eq!(secs("PT5M30S"), 330.0);
        assert_eq!(secs("PT0.5S"), 0.5);
        assert_eq!(secs("P1W"), 604_800.0);
        assert_eq!(secs("P1DT2H"), 93_600.0);
        assert_eq!(secs("PT1H"), 3600.0);
    }

    #[test]
    fn shortcuts() {
        assert_eq!(secs("7d"), 604_800.0);
        assert_eq!(secs("4h"), 14_400.0);
        assert_eq!(secs("30m"), 1800.0);
        assert_eq!(secs("45s"), 45.0);
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(secs("1.5h"), 5400.0);
    }

    #[test]
    fn rejects_garbage_with_clear_errors() {
        for bad in [
            "", "P", "PT", "5", "5x", "d", "PT5H3", "P1S", "PT1D", "PT5S5M", "-5s", "1..5s",
        ] {
            assert!(
                matches!(parse_duration(bad), Err(DurationError::Syntax(_))),
                "{bad:?} -> {:?}",
                parse_duration(bad)
            );
        }
        assert_eq!(
            parse_duration("P1M"),
            Err(DurationError::CalendarUnit("P1M".to_owned()))
        );
        let msg = parse_duration("soon").map_err(|e| e.to_string());
        assert!(msg.is_err_and(|m| m.contains("invalid duration 'soon'") && m.contains("PT5M30S")));
    }

    #[test]
    fn durations_up_to_a_hundred_years_are_taken_and_longer_ones_rejected() {
        assert_eq!(parse_duration("36525d"), Ok(MAX_DURATION));
        assert_eq!(
            parse_duration(&format!("{MAX_DURATION_SECS}s")),
            Ok(MAX_DURATION)
        );
        for long in [
            "36526d",
            "5218w",
            "P36526D",
            "PT876601H",
            "99999999999999999999999999999999h",
            &format!("1{}d", "0".repeat(400)),
            "P1000000000000000000000W",
        ] {
            let err = parse_duration(long);
            assert_eq!(err, Err(DurationError::Overflow(long.to_owned())), "{long}");
            let msg = err.unwrap_err().to_string();
            assert!(
                msg.contains("100 years") && msg.contains("3155760000 seconds"),
                "{msg}"
            );
        }
    }

    #[test]
    fn saturating_secs_clamps_and_never_panics() {
        assert_eq!(saturating_secs(1.5), Duration::from_millis(1500));
        assert_eq!(saturating_secs(0.0), Duration::ZERO);
        assert_eq!(saturating_secs(-3.0), Duration::ZERO);
        assert_eq!(saturating_secs(f64::NAN), Duration::ZERO);
        assert_eq!(saturating_secs(f64::NEG_INFINITY), Duration::ZERO);
        assert_eq!(saturating_secs(1e20), MAX_DURATION);
        assert_eq!(saturating_secs(1e300), MAX_DURATION);
        assert_eq!(saturating_secs(f64::INFINITY), MAX_DURATION);
        assert_eq!(saturating_secs(f64::MAX), MAX_DURATION);
    }
}
