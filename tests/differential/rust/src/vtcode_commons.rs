//! Stand-in for the `vtcode_commons` crate: only the two helpers the reference calls,
//! written from the semantics in `reference/NOTES.md`.

pub mod formatting {
    /// Lowercase the first character when it starts a plain capitalised word: it is
    /// `Uppercase`, is not `I`, and the next character is absent, `Lowercase` or
    /// `White_Space`. The lowered form may be several characters (`İ` → `i̇`).
    ///
    /// ```
    /// # use vtcode_commons::formatting::lowercase_leading_word;
    /// assert_eq!(lowercase_leading_word("Tool calls were rejected"), "tool calls were rejected");
    /// assert_eq!(lowercase_leading_word("MCP server"), "MCP server");
    /// assert_eq!(lowercase_leading_word("X1 exploit"), "X1 exploit");
    /// assert_eq!(lowercase_leading_word("I cannot"), "I cannot");
    /// assert_eq!(lowercase_leading_word("It is"), "It is");
    /// assert_eq!(lowercase_leading_word("A"), "a");
    /// ```
    pub fn lowercase_leading_word(text: &str) -> String {
        let mut chars = text.chars();
        let Some(first) = chars.next() else {
            return String::new();
        };
        let second = chars.clone().next();
        let plain_word =
            first.is_uppercase() && first != 'I' && second.is_none_or(|c| c.is_lowercase() || c.is_whitespace());
        if plain_word {
            let mut lowered: String = first.to_lowercase().collect();
            lowered.push_str(chars.as_str());
            lowered
        } else {
            text.to_string()
        }
    }

    /// `text` unchanged when it has at most `max_len` chars (Unicode scalar values);
    /// otherwise its first `max_len - chars(ellipsis)` chars (never below zero) followed
    /// by `ellipsis`.
    ///
    /// ```
    /// # use vtcode_commons::formatting::truncate_within;
    /// assert_eq!(truncate_within("hello world", 8, "..."), "hello...");
    /// assert_eq!(truncate_within("hi", 8, "..."), "hi");
    /// assert_eq!(truncate_within("hello", 3, "…"), "he…");
    /// assert_eq!(truncate_within("hello", 2, "..."), "...");
    /// ```
    pub fn truncate_within(text: &str, max_len: usize, ellipsis: &str) -> String {
        if text.chars().count() <= max_len {
            return text.to_string();
        }
        let keep = max_len.saturating_sub(ellipsis.chars().count());
        let mut truncated = text.chars().take(keep).collect::<String>();
        truncated.push_str(ellipsis);
        truncated
    }
}
