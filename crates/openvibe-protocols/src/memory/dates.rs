//! Calendar dates as single terms: the analyzer's date recognition.
//!
//! "7 July, 2023", "July 7, 2023", "8th December, 2023" and "2023-07-07"
//! each add the day term `d20230707` and the month term `m202307`; "July
//! 2023" adds the month term alone. The words themselves are indexed as
//! usual, so nothing is lost; the added terms let a question that names a
//! day or a month find what was said then (a day is one rare term, where
//! "7", "juli" and "2023" are each common).

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
fn year(word: &str) -> Option<u32> {
    if word.len() != 4 || !word.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let y: u32 = word.parse().ok()?;
    (1000..3000).contains(&y).then_some(y)
}

fn day_term(y: u32, m: u32, d: u32) -> String {
    format!("d{y:04}{m:02}{d:02}")
}

fn month_term(y: u32, m: u32) -> String {
    format!("m{y:04}{m:02}")
}

/// The date terms of a text's words (lowercase runs of alphanumerics, in
/// order, stop words not yet dropped), in order of appearance.
pub(crate) fn date_terms(words: &[String]) -> Vec<String> {
    let mut terms = Vec::new();
    let at = |i: usize| words.get(i).map(String::as_str).unwrap_or_default();
    let mut i = 0;
    while i < words.len() {
        let w = at(i);
        // 7 July 2023, 7th of July 2023
        if let Some(d) = day(w) {
            let of = usize::from(at(i + 1) == "of");
            if let (Some(m), Some(y)) = (month(at(i + 1 + of)), year(at(i + 2 + of))) {
                terms.push(day_term(y, m, d));
                terms.push(month_term(y, m));
                i += 3 + of;
                continue;
            }
        }
        if let Some(m) = month(w) {
            // July 7 2023
            if let (Some(d), Some(y)) = (day(at(i + 1)), year(at(i + 2))) {
                terms.push(day_term(y, m, d));
                terms.push(month_term(y, m));
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
                terms.push(day_term(y, m, d));
                terms.push(month_term(y, m));
                i += 3;
                continue;
            }
        }
        i += 1;
    }
    terms
}

/// Whether `term` is a day or month term of [`date_terms`].
pub(crate) fn is_date_term(term: &str) -> bool {
    let digits = match term.as_bytes().first() {
        Some(b'd') => 8,
        Some(b'm') => 6,
        _ => return false,
    };
    term.len() == digits + 1 && term[1..].bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str) -> Vec<String> {
        let words: Vec<String> = text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        date_terms(&words)
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
        for word in ["d2023070", "m2023", "dance", "m20230707", "x20230707", ""] {
            assert!(!is_date_term(word), "{word}");
        }
    }

    #[test]
    fn numbers_that_are_no_date_give_nothing() {
        assert!(terms("I may 2 go, 2023 alone, 7 2023").is_empty());
        // Not a day, but still a month.
        assert_eq!(terms("32 July 2023"), ["m202307"]);
        assert!(terms("2023-13-01 and 2023-1-01").is_empty());
        assert!(terms("").is_empty());
    }
}
