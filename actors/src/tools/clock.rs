//! `get_now` and `get_date`: the time and the date, in the user's offset.
//!
//! Both read [`ToolContext::now`], never the system clock, so a turn sees
//! one instant and a replay of an old turn answers for that turn's day.
//! `get_date` takes the `date` argument in either form the fast path
//! produces (seed 000 §10): ISO `YYYY-MM-DD`, or the words the user said
//! ("yesterday", "domani") as a replayed `{date.text}` placeholder passes
//! them, read by the same extractor ([`engram_learning::fast_path::extract()`]).

use chrono::{Duration, NaiveDate};
use engram_events::payloads::{SideEffectClass, ToolArgs};
use engram_learning::fast_path::{extract, SlotKind};
use serde_json::json;

use super::{args, Tool, ToolContext, ToolError, ToolOutput};

/// The furthest `offset_days` may reach (about 100 years either way).
const MAX_OFFSET_DAYS: i64 = 36_600;

/// `get_now`: the current local time, e.g.
/// `14:05 (Monday 23 November 2026, UTC+01:00)`.
#[derive(Clone, Copy, Debug, Default)]
pub struct GetNow;

impl Tool for GetNow {
    fn name(&self) -> &str {
        "get_now"
    }

    fn description(&self) -> &str {
        "what time is it now: the current local time and date"
    }

    fn parameters(&self) -> serde_json::Value {
        json!({ "type": "object", "properties": {}, "additionalProperties": false })
    }

    fn side_effect(&self) -> SideEffectClass {
        SideEffectClass::Read
    }

    fn call(&self, args: &ToolArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        args::only(args, self.name(), &[])?;
        Ok(ToolOutput::trusted(ctx.now.format("%H:%M (%A %-d %B %Y, UTC%:z)").to_string()))
    }
}

/// `get_date`: today's date, or the date `date` names shifted by
/// `offset_days`, e.g. `Tuesday 24 November 2026 (2026-11-24)`.
#[derive(Clone, Copy, Debug, Default)]
pub struct GetDate;

impl GetDate {
    fn day(&self, args: &ToolArgs, ctx: &ToolContext) -> Result<NaiveDate, ToolError> {
        let bad = |field: &str, message: String| ToolError::BadArgs {
            tool: self.name().to_owned(),
            field: field.to_owned(),
            message,
        };
        let base = match args::opt_str(args, self.name(), "date")? {
            None => ctx.now.date_naive(),
            Some(text) => match NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d") {
                Ok(day) => day,
                Err(_) => extract(text, ctx.now)
                    .slots
                    .into_iter()
                    .find(|s| s.kind == SlotKind::Date)
                    .and_then(|s| s.value.as_str().and_then(|v| NaiveDate::parse_from_str(v, "%Y-%m-%d").ok()))
                    .ok_or_else(|| {
                        bad("date", format!("{text:?} is not a date (YYYY-MM-DD, or a day such as today, tomorrow)"))
                    })?,
            },
        };
        let offset = args::opt_int(args, self.name(), "offset_days")?.unwrap_or(0);
        if offset.abs() > MAX_OFFSET_DAYS {
            return Err(bad("offset_days", format!("{offset} is out of range (at most ±{MAX_OFFSET_DAYS})")));
        }
        base.checked_add_signed(Duration::days(offset))
            .ok_or_else(|| bad("offset_days", format!("{offset} days from {base} is out of range")))
    }
}

impl Tool for GetDate {
    fn name(&self) -> &str {
        "get_date"
    }

    fn description(&self) -> &str {
        "what day is it: today's date, or the date of a given day (yesterday, tomorrow, in N days)"
    }

    fn parameters(&self) -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "date": {
                    "type": "string",
                    "description": "the day: YYYY-MM-DD or a word such as today, yesterday, tomorrow (default: today)"
                },
                "offset_days": { "type": "integer", "description": "days to add to the date (negative: before)" }
            },
            "additionalProperties": false
        })
    }

    fn side_effect(&self) -> SideEffectClass {
        SideEffectClass::Read
    }

    fn call(&self, args: &ToolArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        args::only(args, self.name(), &["date", "offset_days"])?;
        let day = self.day(args, ctx)?;
        Ok(ToolOutput::trusted(day.format("%A %-d %B %Y (%Y-%m-%d)").to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::DateTime;
    use engram_events::SessionId;

    fn ctx(at: &str) -> ToolContext {
        ToolContext::new(SessionId::new("s"), DateTime::parse_from_rfc3339(at).unwrap())
    }

    fn date(json: &str) -> Result<String, ToolError> {
        GetDate.call(&ToolArgs::from_json(json).unwrap(), &ctx("2026-11-23T00:30:00+01:00")).map(|o| o.text)
    }

    #[test]
    fn now_is_in_the_contexts_offset() {
        let out = GetNow.call(&ToolArgs::default(), &ctx("2026-11-23T14:05:59+01:00")).unwrap();
        assert_eq!(out.text, "14:05 (Monday 23 November 2026, UTC+01:00)");
        assert!(!out.untrusted && out.undo.is_none());
        let out = GetNow.call(&ToolArgs::default(), &ctx("2026-07-04T09:00:00Z")).unwrap();
        assert_eq!(out.text, "09:00 (Saturday 4 July 2026, UTC+00:00)");
    }

    #[test]
    fn date_forms_the_fast_path_produces() {
        // 00:30 local is still the 23rd although it is the 22nd in UTC.
        assert_eq!(date("{}").unwrap(), "Monday 23 November 2026 (2026-11-23)");
        assert_eq!(date(r#"{"date":"2026-12-25"}"#).unwrap(), "Friday 25 December 2026 (2026-12-25)");
        assert_eq!(date(r#"{"date":"yesterday"}"#).unwrap(), "Sunday 22 November 2026 (2026-11-22)");
        assert_eq!(date(r#"{"date":"domani"}"#).unwrap(), "Tuesday 24 November 2026 (2026-11-24)");
        assert_eq!(date(r#"{"date":"the day after tomorrow"}"#).unwrap(), "Wednesday 25 November 2026 (2026-11-25)");
        assert_eq!(date(r#"{"offset_days":-30}"#).unwrap(), "Saturday 24 October 2026 (2026-10-24)");
        assert_eq!(date(r#"{"date":"2026-02-28","offset_days":"1"}"#).unwrap(), "Sunday 1 March 2026 (2026-03-01)");
    }

    #[test]
    fn bad_dates_name_the_argument() {
        let e = date(r#"{"date":"someday"}"#).unwrap_err().to_string();
        assert!(e.starts_with("get_date: argument \"date\"") && e.contains("someday"), "{e}");
        let e = date(r#"{"date":"2026-02-30"}"#).unwrap_err().to_string();
        assert!(e.contains("\"date\""), "{e}");
        let e = date(r#"{"offset_days":99999999999}"#).unwrap_err().to_string();
        assert!(e.contains("offset_days") && e.contains("out of range"), "{e}");
        let e = date(r#"{"when":"today"}"#).unwrap_err().to_string();
        assert!(e.contains("when"), "{e}");
    }
}
