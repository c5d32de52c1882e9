//! The tokenizer: the words a text is read as, before any analysis.

/// The words the analyzer reads: lowercase runs of alphanumerics, in
/// order, stop words kept (date recognition reads "of", "last", "the").
pub(crate) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}
