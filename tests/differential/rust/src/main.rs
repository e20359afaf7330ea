//! Differential harness for `refusals.refusal.refusal_reason`.
//!
//! `src/refusal.rs` is the reference module copied byte for byte; this file supplies
//! the `crate::llm::provider` types it imports (only the fields it reads) and the I/O.
//!
//! Modes:
//! - default: read JSON lines `{"content": str|null, "reasoning_details": [str]|null,
//!   "iterations": [json]|null}` on stdin, write one line `{"reason": str}` per case (or
//!   `{"error": str}` when a line is not a valid case, so the output stays aligned).
//! - `--unicode-dump`: one line per char whose `is_uppercase`, `is_lowercase`,
//!   `is_whitespace` or `to_lowercase` is not the trivial answer (false, false, false,
//!   itself): `HEX FLAGS LOWER`, FLAGS being `U`/`L`/`W` or `-`, LOWER the lowercase
//!   mapping as comma-separated hex. The first line is `unicode MAJOR.MINOR.PATCH`.

// A byte-for-byte copy of the reference: never reformatted, never edited.
#[allow(dead_code)]
#[rustfmt::skip]
mod refusal;

#[allow(dead_code)]
mod llm {
    pub mod provider {
        use serde_json::Value;

        #[derive(Debug, Clone, Default, PartialEq)]
        pub enum FinishReason {
            #[default]
            Stop,
            Length,
            ToolCalls,
            ContentFilter,
            Pause,
            Refusal,
            Error(String),
        }

        #[derive(Debug, Clone, Default)]
        pub struct Usage {
            pub prompt_tokens: u32,
            pub completion_tokens: u32,
            pub total_tokens: u32,
            pub iterations: Option<Vec<Value>>,
        }

        #[derive(Debug, Clone, Default)]
        pub struct LLMResponse {
            pub content: Option<String>,
            pub finish_reason: FinishReason,
            pub reasoning_details: Option<Vec<String>>,
            pub usage: Option<Usage>,
        }
    }
}

use std::io::{self, BufRead, BufWriter, Write};

use llm::provider::{FinishReason, LLMResponse, Usage};
use serde_json::Value;

fn response_from_case(case: &Value) -> Result<LLMResponse, String> {
    let object = case.as_object().ok_or("case is not a JSON object")?;
    let content = match object.get("content") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.clone()),
        Some(_) => return Err("content must be a string or null".into()),
    };
    let reasoning_details = match object.get("reasoning_details") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => Some(
            items
                .iter()
                .map(|item| item.as_str().map(str::to_string).ok_or("detail is not a string"))
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(_) => return Err("reasoning_details must be a list or null".into()),
    };
    let usage = match object.get("iterations") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => Some(Usage { iterations: Some(items.clone()), ..Usage::default() }),
        Some(_) => return Err("iterations must be a list or null".into()),
    };
    Ok(LLMResponse { content, finish_reason: FinishReason::Refusal, reasoning_details, usage })
}

fn run_cases() -> io::Result<()> {
    let stdin = io::stdin();
    let mut out = BufWriter::new(io::stdout().lock());
    for line in stdin.lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let result = serde_json::from_str::<Value>(&line)
            .map_err(|error| error.to_string())
            .and_then(|case| response_from_case(&case));
        let record = match result {
            Ok(response) => serde_json::json!({ "reason": refusal::refusal_reason(&response) }),
            Err(error) => serde_json::json!({ "error": error }),
        };
        writeln!(out, "{record}")?;
    }
    out.flush()
}

fn unicode_dump() -> io::Result<()> {
    let mut out = BufWriter::new(io::stdout().lock());
    let (major, minor, patch) = char::UNICODE_VERSION;
    writeln!(out, "unicode {major}.{minor}.{patch}")?;
    for c in (0..=0x10FFFF_u32).filter_map(char::from_u32) {
        let lower: Vec<char> = c.to_lowercase().collect();
        let upper = c.is_uppercase();
        let lowercase = c.is_lowercase();
        let space = c.is_whitespace();
        if !upper && !lowercase && !space && lower == [c] {
            continue;
        }
        let flags: String = [(upper, 'U'), (lowercase, 'L'), (space, 'W')]
            .iter()
            .filter(|(set, _)| *set)
            .map(|(_, flag)| *flag)
            .collect();
        let lower_hex: Vec<String> = lower.iter().map(|l| format!("{:X}", *l as u32)).collect();
        let flags = if flags.is_empty() { "-".to_string() } else { flags };
        writeln!(out, "{:X} {flags} {}", c as u32, lower_hex.join(","))?;
    }
    out.flush()
}

fn main() {
    let result = match std::env::args().nth(1).as_deref() {
        None => run_cases(),
        Some("--unicode-dump") => unicode_dump(),
        Some(other) => {
            eprintln!("unknown argument {other:?}; expected no argument or --unicode-dump");
            std::process::exit(2);
        }
    };
    if let Err(error) = result {
        eprintln!("refusal-harness: {error}");
        std::process::exit(1);
    }
}
