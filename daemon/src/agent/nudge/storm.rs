//! The storm breaker's words (Swival's `storm_breaker`): what a model is
//! told when its call is refused as a repeat, with the next step named
//! after a read. When a call is refused is the loop guards' to say
//! (`guard.rs`, which keeps the window of calls).

use serde_json::Value;

/// The result of the `count`th identical call of `name` with `raw_args`,
/// refused; `after_read`: the call read, and the next step is named.
pub(in crate::agent) fn words(name: &str, raw_args: &str, count: usize, after_read: bool) -> String {
    format!(
        "error: repeat-loop guard tripped — {name} was called with identical arguments {count} times. \
         Try a different approach. This call was not run: {name} {args} already gave its result above; \
         read that result and do the next step instead (another tool, other arguments, or your final answer).{next}",
        args = shown(raw_args),
        next = if after_read { after_reading(raw_args) } else { String::new() },
    )
}

/// The arguments as the model can copy them, shortened.
pub(in crate::agent) fn shown(raw_args: &str) -> String {
    let one_line: String = raw_args.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= 200 {
        return one_line;
    }
    format!("{}…", one_line.chars().take(200).collect::<String>())
}

/// The next step named to a model refused a read it already made: a
/// small one reads the same file until its turns run out, the generic
/// "do the next step" notwithstanding.
fn after_reading(raw_args: &str) -> String {
    let file =
        serde_json::from_str::<Value>(raw_args).ok().and_then(|v| v.get("file_path")?.as_str().map(str::to_owned));
    let edit = match file {
        Some(f) => format!(
            "edit_file with file_path \"{f}\", old_string one line copied from that result, new_string the line as it \
             must be"
        ),
        None => "edit_file or write_file".to_owned(),
    };
    format!(
        " Nothing changed since, so reading again shows the same. If the task asks for a change, make it now: \
         {edit}. If it asks a question, reply now with the answer as text and call no tool."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_call_and_after_a_read_the_next_step() {
        let long = format!(r#"{{"content": "{}"}}"#, "x".repeat(300));
        let cases = [
            ("read_file", r#"{"file_path": "a.py"}"#, true, "make it now: edit_file with file_path \"a.py\""),
            ("grep", r#"{"pattern": "PORT"}"#, true, "make it now: edit_file or write_file."),
            ("edit_file", r#"{"file_path": "a.py"}"#, false, "(another tool, other arguments, or your final answer)."),
            ("write_file", &long, false, "…"),
        ];
        for (name, args, after_read, said) in cases {
            let w = words(name, args, 3, after_read);
            assert!(w.starts_with(&format!("error: repeat-loop guard tripped — {name} was called")), "{w}");
            assert!(w.contains(said), "{w}");
            assert_eq!(w.contains("make it now"), after_read, "{w}");
        }
    }
}
