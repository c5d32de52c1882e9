//! Calendar dates as single terms: the analyzer's date recognition.
//!
//! "7 July, 2023", "July 7, 2023", "8th December, 2023" and "2023-07-07"
//! each add the day term `d20230707` and the month term `m202307`; "July
//! 2023" adds the month term alone. The words themselves are indexed as
//! usual, so nothing is lost; the added terms let a question that names a
//! day or a month find what was said then (a day is one rare term, where
//! "7", "juli" and "2023" are each common).
//!
//! A text that names a day (its *anchor*: the first day it names, such as
//! the date a remembered turn was said on) also has its relative dates
//! resolved against it: "yesterday", "last Friday", "last weekend", "two
//! weeks ago", "last month", "next week", and in a question "the week
//! before 16 November 2023". A resolved day adds its day, week and month
//! terms (`d20231110`, `w202345`, the ISO week, `m202311`), a resolved week
//! its week and month terms, a resolved month its month term, so "What did
//! John attend in March 2023?" finds "we went to a convention last month"
//! said in April. A part of a named month ("the beginning of November
//! 2022", "late May 2023", "the second week of May 2023") adds the week
//! terms of its days, so it finds "last Saturday" said on 7 November.
//!
//! Week terms come only from resolved and partial dates, not from a named
//! day: giving every dated text its week term measured no better (see
//! `docs/retrieval.md`).

use chrono::{Datelike, Days, Months, NaiveDate, Weekday};

/// The month (1–12) a lowercase word names: full names and the usual
/// abbreviations.
fn month(word: &str) -> Option<u32> {
    Some(match word {
        "january" | "jan" => 1,
        "february" | "feb" => 2,
        "march" | "mar" => 3,
        "april" | "apr" => 4,
        "may" => 5,
        "june" | "jun" => 6,
        "july" | "jul" => 7,
        "august" | "aug" => 8,
        "september" | "sep" | "sept" => 9,
        "october" | "oct" => 10,
        "november" | "nov" => 11,
        "december" | "dec" => 12,
        _ => return None,
    })
}

/// A day of the month: `7`, `07`, `7th`, `1st`, `22nd`, `23rd`.
fn day(word: &str) -> Option<u32> {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    if digits.is_empty() || digits.len() > 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !matches!(suffix, "" | "st" | "nd" | "rd" | "th") {
        return None;
    }
    let d: u32 = digits.parse().ok()?;
    (1..=31).contains(&d).then_some(d)
}

/// A four-digit year from 1000 to 2999.
fn year(word: &str) -> Option<i32> {
    if word.len() != 4 || !word.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let y: i32 = word.parse().ok()?;
    (1000..3000).contains(&y).then_some(y)
}

fn day_term(date: NaiveDate) -> String {
    format!("d{}", date.format("%Y%m%d"))
}

fn month_term(y: i32, m: u32) -> String {
    format!("m{y:04}{m:02}")
}

fn week_term(date: NaiveDate) -> String {
    let week = date.iso_week();
    format!("w{:04}{:02}", week.year(), week.week())
}

/// The word at `i`, or `""` past the end: patterns look ahead without
/// bounds checks.
fn word(words: &[String], i: usize) -> &str {
    words.get(i).map(String::as_str).unwrap_or_default()
}

/// A weekday a lowercase word names: full names and the usual
/// abbreviations.
fn weekday(word: &str) -> Option<Weekday> {
    Some(match word {
        "monday" | "mon" => Weekday::Mon,
        "tuesday" | "tue" | "tues" => Weekday::Tue,
        "wednesday" | "wed" => Weekday::Wed,
        "thursday" | "thu" | "thurs" => Weekday::Thu,
        "friday" | "fri" => Weekday::Fri,
        "saturday" | "sat" => Weekday::Sat,
        "sunday" | "sun" => Weekday::Sun,
        _ => return None,
    })
}

/// A small count: `3`, `three`, `a`, `an`, `couple` (of).
fn count(word: &str) -> Option<u32> {
    Some(match word {
        "a" | "an" | "one" => 1,
        "two" | "couple" => 2,
        "three" => 3,
        "four" => 4,
        "five" => 5,
        "six" => 6,
        "seven" => 7,
        "eight" => 8,
        "nine" => 9,
        "ten" => 10,
        _ if word.len() <= 2 && word.bytes().all(|b| b.is_ascii_digit()) => {
            word.parse().ok().filter(|n| (1..=31).contains(n))?
        }
        _ => return None,
    })
}

/// What a relative expression names, resolved against an anchor day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Span {
    Day(NaiveDate),
    Week(NaiveDate),
    Month(NaiveDate),
}

/// The day `n` days before `anchor` (`back`) or after it.
fn step(anchor: NaiveDate, n: u32, back: bool) -> Option<NaiveDate> {
    let n = Days::new(u64::from(n));
    if back {
        anchor.checked_sub_days(n)
    } else {
        anchor.checked_add_days(n)
    }
}

/// The most recent `wd` strictly before `anchor` (`back`), or the first
/// strictly after it.
fn nearest(anchor: NaiveDate, wd: Weekday, back: bool) -> Option<NaiveDate> {
    let (a, w) = (
        anchor.weekday().num_days_from_monday(),
        wd.num_days_from_monday(),
    );
    let d = if back {
        (a + 7 - w) % 7
    } else {
        (w + 7 - a) % 7
    };
    step(anchor, if d == 0 { 7 } else { d }, back)
}

/// `n` units (day, week, month) from `anchor`, back or forward.
fn shift(anchor: NaiveDate, unit: &str, n: u32, back: bool) -> Option<Span> {
    Some(match unit {
        "day" | "days" => Span::Day(step(anchor, n, back)?),
        "week" | "weeks" => Span::Week(step(anchor, 7 * n, back)?),
        "month" | "months" => Span::Month(if back {
            anchor.checked_sub_months(Months::new(n))?
        } else {
            anchor.checked_add_months(Months::new(n))?
        }),
        _ => return None,
    })
}

/// The relative expression starting at `words[i]`, resolved against
/// `anchor`: what it names and how many words it spans.
fn relative(words: &[String], i: usize, anchor: NaiveDate) -> Option<(Vec<Span>, usize)> {
    let at = |k: usize| word(words, k);
    let one = |span: Option<Span>, len: usize| span.map(|s| (vec![s], len));
    let (back, unit) = match (at(i), at(i + 1)) {
        ("yesterday", _) => return one(shift(anchor, "day", 1, true), 1),
        ("tomorrow", _) => return one(shift(anchor, "day", 1, false), 1),
        // last Friday, past weekend, next month ("the last day" and "the
        // next day" are seldom yesterday and tomorrow)
        ("last" | "past" | "previous", unit) if unit != "day" => (true, unit),
        ("next", unit) if unit != "day" => (false, unit),
        // (in a question) the week before 16 November 2023
        (unit @ ("day" | "week" | "weekend" | "month"), "before") => (true, unit),
        (unit @ ("day" | "week" | "weekend" | "month"), "after") => (false, unit),
        // two weeks ago, a couple of days ago
        (w, _) => {
            let n = count(w)?;
            let of = usize::from(w == "couple" && at(i + 1) == "of");
            if at(i + 2 + of) != "ago" {
                return None;
            }
            return one(shift(anchor, at(i + 1 + of), n, true), 3 + of);
        }
    };
    if let Some(wd) = weekday(unit) {
        return one(nearest(anchor, wd, back).map(Span::Day), 2);
    }
    match unit {
        "night" if back => one(shift(anchor, "day", 1, true), 2),
        "weekend" => {
            let sat = nearest(anchor, Weekday::Sat, back)?;
            let sun = sat.checked_add_days(Days::new(1))?;
            Some((vec![Span::Day(sat), Span::Day(sun)], 2))
        }
        "day" | "week" | "month" => one(shift(anchor, unit, 1, back), 2),
        _ => None,
    }
}

/// A part of a named month that starts at `words[i]`: "the beginning
/// (start, end) of", "early (mid, late)", "the second (first, third,
/// fourth, last) week of", each followed by a month and year. Its first and
/// last day, and the words before the month.
fn part_of_month(words: &[String], i: usize) -> Option<(NaiveDate, NaiveDate, usize)> {
    let at = |k: usize| word(words, k);
    let (part, len) = match (at(i), at(i + 1), at(i + 2)) {
        ("beginning" | "start" | "end", "of", _) => (at(i), 2),
        ("early" | "mid" | "late", _, _) => (at(i), 1),
        (nth, "week", "of") => (nth, 3),
        _ => return None,
    };
    let (m, y) = (month(at(i + len))?, year(at(i + len + 1))?);
    let first = NaiveDate::from_ymd_opt(y, m, 1)?;
    let end = first.checked_add_months(Months::new(1))?.pred_opt()?.day();
    let (from, to) = match part {
        "beginning" | "start" => (1, 7),
        "end" => (end - 6, end),
        "early" => (1, 10),
        "mid" => (11, 20),
        "late" => (21, end),
        "last" => (end - 6, end),
        nth => {
            let n = match nth {
                "first" | "1st" => 1,
                "second" | "2nd" => 2,
                "third" | "3rd" => 3,
                "fourth" | "4th" => 4,
                _ => return None,
            };
            (7 * n - 6, 7 * n)
        }
    };
    Some((first.with_day(from)?, first.with_day(to)?, len))
}

/// The date terms of a text's words (lowercase runs of alphanumerics, in
/// order, stop words not yet dropped), in order of appearance.
pub(crate) fn date_terms(words: &[String]) -> Vec<String> {
    let mut terms = Vec::new();
    let mut anchor = None;
    let at = |k: usize| word(words, k);
    // A day that does not exist (31 February) still names its month.
    let mut named = |terms: &mut Vec<String>, y: i32, m: u32, d: u32| {
        let date = NaiveDate::from_ymd_opt(y, m, d);
        if let Some(date) = date {
            terms.push(day_term(date));
        }
        terms.push(month_term(y, m));
        anchor = anchor.or(date);
    };
    let mut i = 0;
    while i < words.len() {
        let w = at(i);
        // the beginning of November 2022: its weeks; then the month below
        if let Some((first, last, len)) = part_of_month(words, i) {
            for day in first.iter_days().take_while(|d| *d <= last) {
                push_new(&mut terms, week_term(day));
            }
            i += len;
            continue;
        }
        // 7 July 2023, 7th of July 2023
        if let Some(d) = day(w) {
            let of = usize::from(at(i + 1) == "of");
            if let (Some(m), Some(y)) = (month(at(i + 1 + of)), year(at(i + 2 + of))) {
                named(&mut terms, y, m, d);
                i += 3 + of;
                continue;
            }
        }
        if let Some(m) = month(w) {
            // July 7 2023
            if let (Some(d), Some(y)) = (day(at(i + 1)), year(at(i + 2))) {
                named(&mut terms, y, m, d);
                i += 3;
                continue;
            }
            // July 2023
            if let Some(y) = year(at(i + 1)) {
                terms.push(month_term(y, m));
                i += 2;
                continue;
            }
        }
        // 2023-07-07 (split into three words by the analyzer)
        if let Some(y) = year(w) {
            let m = at(i + 1);
            if m.len() == 2
                && let (Ok(m), Some(d)) = (m.parse::<u32>(), day(at(i + 2)))
                && (1..=12).contains(&m)
                && at(i + 2).len() == 2
            {
                named(&mut terms, y, m, d);
                i += 3;
                continue;
            }
        }
        i += 1;
    }
    if let Some(anchor) = anchor {
        resolve(words, anchor, &mut terms);
    }
    terms
}

/// Add the terms of every relative expression in `words`, resolved against
/// `anchor`; a term the text already has is not added again.
fn resolve(words: &[String], anchor: NaiveDate, terms: &mut Vec<String>) {
    let mut add = |term: String| push_new(terms, term);
    let mut i = 0;
    while i < words.len() {
        let Some((spans, len)) = relative(words, i, anchor) else {
            i += 1;
            continue;
        };
        for span in spans {
            match span {
                Span::Day(d) => {
                    add(day_term(d));
                    add(week_term(d));
                    add(month_term(d.year(), d.month()));
                }
                Span::Week(d) => {
                    add(week_term(d));
                    add(month_term(d.year(), d.month()));
                }
                Span::Month(d) => add(month_term(d.year(), d.month())),
            }
        }
        i += len;
    }
}

/// Push `term` unless `terms` has it: a resolved date adds to the count of
/// a term already named no more than once.
fn push_new(terms: &mut Vec<String>, term: String) {
    if !terms.contains(&term) {
        terms.push(term);
    }
}

/// Whether `term` is a day, week or month term of [`date_terms`].
pub(crate) fn is_date_term(term: &str) -> bool {
    let digits = match term.as_bytes().first() {
        Some(b'd') => 8,
        Some(b'm' | b'w') => 6,
        _ => return false,
    };
    term.len() == digits + 1 && term[1..].bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str) -> Vec<String> {
        date_terms(&crate::words::words(text))
    }

    #[test]
    fn days_in_every_common_order_give_the_same_terms() {
        for text in [
            "1:56 pm on 7 July, 2023",
            "on July 7, 2023?",
            "on 7th July 2023",
            "the 7th of July, 2023",
            "jul 7 2023",
            "2023-07-07",
        ] {
            assert_eq!(terms(text), ["d20230707", "m202307"], "{text}");
        }
    }

    #[test]
    fn a_month_and_year_give_the_month_term() {
        assert_eq!(
            terms("in December 2023 and January, 2024"),
            ["m202312", "m202401"]
        );
        assert_eq!(terms("December 1,2023"), ["d20231201", "m202312"]);
    }

    #[test]
    fn date_terms_are_told_from_words() {
        assert!(is_date_term("d20230707"));
        assert!(is_date_term("m202307"));
        assert!(is_date_term("w202345"));
        for word in [
            "d2023070",
            "m2023",
            "w2023",
            "dance",
            "m20230707",
            "x20230707",
            "",
        ] {
            assert!(!is_date_term(word), "{word}");
        }
    }

    #[test]
    fn relative_dates_resolve_against_the_first_day_named() {
        // 15 July 2023 is a Saturday.
        assert_eq!(
            terms("Mel (1:51 pm on 15 July, 2023): Last Fri I took my kids to a pottery class"),
            ["d20230715", "m202307", "d20230714", "w202328"]
        );
        assert_eq!(
            terms("(2 April, 2023): we went to a convention last month, and yesterday?"),
            ["d20230402", "m202304", "m202303", "d20230401", "w202313"]
        );
        // 10 April 2023 is a Monday; two weeks before is 27 March.
        assert_eq!(
            terms("on 10 April 2023: two weeks ago, a couple of days ago, last weekend"),
            [
                "d20230410",
                "m202304",
                "w202313",
                "m202303",
                "d20230408",
                "w202314",
                "d20230409"
            ]
        );
        assert_eq!(
            terms("5 January 2024: next month, next week, tomorrow, 3 days ago"),
            [
                "d20240105",
                "m202401",
                "m202402",
                "w202402",
                "d20240106",
                "w202401",
                "d20240102"
            ]
        );
    }

    #[test]
    fn a_question_resolves_a_span_before_or_after_its_date() {
        // 16 November 2023 is a Thursday; the week before is ISO week 45.
        assert_eq!(
            terms("Where was Tim in the week before 16 November 2023?"),
            ["d20231116", "m202311", "w202345"]
        );
        assert_eq!(
            terms("the weekend before April 10, 2023"),
            ["d20230410", "m202304", "d20230408", "w202314", "d20230409"]
        );
        assert_eq!(
            terms("the day after 2023-12-31"),
            ["d20231231", "m202312", "d20240101", "w202401", "m202401"]
        );
    }

    #[test]
    fn a_part_of_a_month_gives_its_weeks() {
        // 1–7 November 2022 are in ISO weeks 44 and 45.
        assert_eq!(
            terms("in the beginning of November 2022"),
            ["w202244", "w202245", "m202211"]
        );
        // 8–14 May 2023 are ISO week 19; 21–29 February 2024, weeks 8 and 9.
        assert_eq!(
            terms("the second week of May 2023, late February 2024"),
            ["w202319", "m202305", "w202408", "w202409", "m202402"]
        );
        assert_eq!(terms("the end of the week of May 2023"), ["m202305"]);
        assert!(terms("early May, the last week of it").is_empty());
    }

    #[test]
    fn relative_dates_need_a_day_to_resolve_against() {
        assert!(terms("last Friday, yesterday, two weeks ago").is_empty());
        assert_eq!(terms("in July 2023, last week"), ["m202307"]);
        assert_eq!(
            terms("7 July 2023: the last time, last year, next door, the next day, 2 ago"),
            ["d20230707", "m202307"]
        );
    }

    #[test]
    fn numbers_that_are_no_date_give_nothing() {
        assert!(terms("I may 2 go, 2023 alone, 7 2023").is_empty());
        // Not a day, but still a month.
        assert_eq!(terms("32 July 2023"), ["m202307"]);
        assert_eq!(terms("31 February 2023"), ["m202302"]);
        assert!(terms("2023-13-01 and 2023-1-01").is_empty());
        assert!(terms("").is_empty());
    }
}
