//! `outline`: Swival's survey of code without its bodies. One file gives
//! its declarations with line numbers (`lang/declarations.rs`), two levels deep
//! unless `depth` says otherwise; a directory gives a shallow survey of
//! its source files (the first 20, entry points first, one level deep)
//! with its subdirectories named; `files` outlines a batch in the
//! sections `read_multiple_files` uses. The arguments' errors are Swival's
//! words.
//!
//! Every path goes through the policy for reading, and the file is opened
//! beneath its root, as `read_file` does: outline shows nothing of a file
//! `read_file` may not read. A directory survey lists what `list_files`
//! would walk (ignore files honoured, hidden paths left out). An outline
//! does not count as a read for the read-before-write guard: it shows no
//! bodies.

use super::files::{looks_binary, open_for_read, Opened};
use super::lang::declared;
use super::path::Access;
use super::schema::{items_between, Requests};
use super::{args, search, ToolBox, ToolError};
use super::{CallInput, Tool};
use crate::toolcall::type_name;
use crate::toolcall::ToolOutcome;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::Path;
use swival_protocol::ToolKind;

/// Show classes, functions, and top-level declarations with line numbers (no bodies). Survey code before reading specific sections. Pass file_path for one file or directory, or files for a batch.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Outline {
    /// Path to a file or directory to outline. A directory produces a shallow survey of its source files.
    pub file_path: Option<String>,
    /// Nesting depth: 1=top-level only, 2=classes+methods, 3=nested functions/classes. When omitted, defaults to 2 for files and 1 for directory surveys. In batch mode, acts as the default for entries without a per-entry depth.
    #[schemars(range(min = 1, max = 3))]
    pub depth: Option<i64>,
    /// List of files or directories to outline (batch mode, max 20).
    // Offered as optional through `default`, not `Option<…>`, whose
    // schema would be flattened with its keys out of Swival's order.
    #[serde(default)]
    #[schemars(with = "Requests<OutlineRequest>", length(max = MAX_BATCH), transform = items_between)]
    pub files: Option<Value>,
}

/// One entry of `outline`'s `files` (no description: Swival's has none);
/// a bare path string is taken too.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct OutlineRequest {
    /// Path to the file or directory to outline.
    pub file_path: String,
    /// Per-file nesting depth override.
    #[schemars(range(min = 1, max = 3))]
    pub depth: Option<i64>,
}

impl Tool for Outline {
    const NAME: &'static str = "outline";
    const KIND: ToolKind = ToolKind::Read;
    const ALIASES: &'static [&'static str] = &["code_outline", "file_outline"];
    // A directory survey, or a batch of them, reads and parses up to 400 files.
    const WALKS_TREE: bool = true;

    fn run(self, tb: &mut ToolBox, _call: &mut CallInput) -> Result<ToolOutcome, ToolError> {
        outline(tb, &self).map(ToolOutcome::ok)
    }
}

/// Most entries in one batch, and most files one directory survey outlines.
pub(super) const MAX_BATCH: usize = 20;
/// Bytes of a file outlined at most; a longer file's outline says so.
const MAX_OUTLINED: u64 = 4 << 20;

const BOTH: &str = "outline received both 'file_path' and 'files'. These are mutually exclusive: pass 'file_path' (a single path string) to outline one file, OR pass 'files' (an array of {file_path, depth?} objects) to outline several in one call. Drop whichever one does not apply and retry.";
const NOT_AN_ARRAY: &str = "outline 'files' must be an array of objects like [{\"file_path\": \"...\", \"depth\": 2}, ...]. To outline a single file, use 'file_path' instead of 'files'.";
const NEITHER: &str = "outline requires either 'file_path' (a single path) or 'files' (an array of {file_path, depth?} objects). Retry with one of these arguments.";

/// Suffixes of the files a directory survey outlines (Swival's).
const SOURCE_SUFFIXES: &[&str] = &[
    "py", "js", "ts", "tsx", "jsx", "go", "rs", "c", "h", "cpp", "java", "rb", "zig", "swift", "kt", "md", "toml",
    "sh", "yaml", "yml",
];
/// Files a survey outlines whatever their suffix.
const SOURCE_NAMES: &[&str] = &["Makefile", "Dockerfile", "README", "pyproject.toml", "Cargo.toml", "package.json"];
/// Generated files a survey leaves out.
const GENERATED: &[&str] = &["package-lock.json", "yarn.lock", "pnpm-lock.yaml", "Cargo.lock", "uv.lock"];
/// Subdirectories a survey does not name.
const SKIPPED_DIRS: &[&str] = &["__pycache__", "node_modules", ".git", "target", "dist", "build", ".venv"];
/// Entry points, outlined first (lowercase).
const ENTRY_POINTS: &[&str] =
    &["__init__.py", "mod.rs", "lib.rs", "readme.md", "pyproject.toml", "cargo.toml", "package.json"];

/// What a batch entry that is a directory gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dirs {
    /// A survey (an entry the model named).
    Survey,
    /// An error (an entry of a survey: a symlink to a directory is not
    /// followed into another survey).
    Refuse,
}

/// `outline`.
pub fn outline(tb: &ToolBox, args: &Outline) -> Result<String, ToolError> {
    // Swival tests both for truth: an empty path or list counts as absent.
    let file_path = args.file_path.as_deref().filter(|p| !p.is_empty());
    let files = args.files.as_ref().filter(|f| truthy(f));
    match (file_path, files) {
        (Some(_), Some(_)) => Err(ToolError::refused(BOTH)),
        (_, Some(Value::String(one))) => batch(tb, &[Value::String(one.clone())], args.depth, Dirs::Survey),
        (_, Some(Value::Array(many))) => batch(tb, many, args.depth, Dirs::Survey),
        (_, Some(_)) => Err(ToolError::refused(NOT_AN_ARRAY)),
        (Some(path), None) => one(tb, path, args.depth, Dirs::Survey),
        (None, None) => Err(ToolError::refused(NEITHER)),
    }
}

/// Whether Python would take `value` as true.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// `depth` as asked (clamped to 1..=3, as Swival does), else `default`.
fn depth_or(depth: Option<i64>, default: usize) -> usize {
    depth.map_or(default, |d| d.clamp(1, 3) as usize)
}

/// The outline of one file, or the survey of one directory.
fn one(tb: &ToolBox, requested: &str, depth: Option<i64>, dirs: Dirs) -> Result<String, ToolError> {
    let path = tb.policy.resolve(requested, Access::Read)?;
    match open_for_read(tb, &path, requested)? {
        Opened::Missing => Err(tb.missing_file(requested, &path, format!("file not found: {requested}"))),
        Opened::Dir(..) if dirs == Dirs::Survey => survey(tb, &path, depth_or(depth, 1)),
        Opened::Dir(..) => Err(ToolError::refused(format!("{requested} is a directory; outline it on its own"))),
        Opened::File(file) => {
            let mut bytes = Vec::new();
            file.take(MAX_OUTLINED + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| ToolError::refused(format!("cannot read {requested}: {e}")))?;
            let cut = bytes.len() as u64 > MAX_OUTLINED;
            bytes.truncate(MAX_OUTLINED as usize);
            let mut out = file_outline(tb, &path, requested, &bytes, depth_or(depth, 2))?;
            if cut {
                let _ = write!(out, "\n[only the first {} MB of {requested} outlined]", MAX_OUTLINED >> 20);
            }
            Ok(out)
        }
    }
}

/// The outline of the file `path` (named `requested`) holding `bytes`.
fn file_outline(tb: &ToolBox, path: &Path, requested: &str, bytes: &[u8], depth: usize) -> Result<String, ToolError> {
    if looks_binary(bytes) {
        return Err(ToolError::refused(format!(
            "binary file: {requested}; outline shows the declarations of text files"
        )));
    }
    // Swival reads what is not UTF-8 as Latin-1; the declarations are ASCII either way.
    let text = String::from_utf8_lossy(bytes);
    if text.trim().is_empty() {
        return Ok("empty file".into());
    }
    let declared = declared(path, &text, depth);
    if declared.lines.is_empty() {
        return Ok(match declared.parsed {
            true => "no declarations found".into(),
            false => format!(
                "no declarations found: outline parses Python, JavaScript, TypeScript, Rust, Go, JSON, TOML and \
                 YAML; in {requested} it looked for lines that open a declaration and found none (read_file shows the text)"
            ),
        });
    }
    Ok(capped(tb, &declared.lines))
}

/// `lines` up to the session's `max_output_lines` and byte cap, saying so
/// when cut.
fn capped(tb: &ToolBox, lines: &[String]) -> String {
    let mut out = String::new();
    let mut shown = 0;
    for line in lines.iter().take(tb.caps.read_lines.max(1)) {
        if shown > 0 && out.len() + line.len() + 1 > tb.caps.read_bytes {
            break;
        }
        if shown > 0 {
            out.push('\n');
        }
        out.push_str(line);
        shown += 1;
    }
    if shown < lines.len() {
        let _ = write!(
            out,
            "\n[outline truncated: {shown} of {} declarations shown; use a smaller depth or outline a narrower path]",
            lines.len()
        );
    }
    out
}

/// `files`: one `=== FILE: … ===` section per entry, within the byte cap
/// of a `read_multiple_files` batch; an entry's error is its section's.
fn batch(tb: &ToolBox, files: &[Value], default_depth: Option<i64>, dirs: Dirs) -> Result<String, ToolError> {
    if files.len() > MAX_BATCH {
        return Err(ToolError::refused(format!("too many files requested ({}), maximum is {MAX_BATCH}", files.len())));
    }
    let (mut ok, mut failed, mut used, mut skipped) = (0, 0, 0, 0);
    let mut sections = Vec::new();
    for (i, spec) in files.iter().enumerate() {
        let (title, result) = entry(tb, i, spec, default_depth, dirs);
        let (status, body) = match &result {
            Ok(text) => ("ok", text.clone()),
            Err(e) => ("error", e.render()),
        };
        let section = format!("=== FILE: {title} ===\nstatus: {status}\n{body}");
        if used + section.len() + 2 > tb.caps.read_bytes && !sections.is_empty() {
            skipped = files.len() - i;
            break;
        }
        used += section.len() + 2;
        match result {
            Ok(_) => ok += 1,
            Err(_) => failed += 1,
        }
        sections.push(section);
    }
    let mut out = format!("files_succeeded: {ok}\nfiles_with_errors: {failed}\nbatch_truncated: {}", skipped > 0);
    for s in &sections {
        out.push_str("\n\n");
        out.push_str(s);
    }
    if skipped > 0 {
        let _ = write!(out, "\n\n[batch_truncated: {skipped} file(s) skipped due to size limit]");
    }
    Ok(out)
}

/// One entry of a batch (a path, or `{file_path, depth?}`): its title and
/// its outline.
fn entry(
    tb: &ToolBox,
    index: usize,
    spec: &Value,
    default_depth: Option<i64>,
    dirs: Dirs,
) -> (String, Result<String, ToolError>) {
    let untitled = || format!("file {}", index + 1);
    match spec {
        Value::String(path) => (path.clone(), one(tb, path, default_depth, dirs)),
        Value::Object(o) => {
            let Some(path) = o.get("file_path").and_then(Value::as_str).filter(|p| !p.is_empty()) else {
                return (untitled(), Err(ToolError::refused("missing file_path")));
            };
            let result = args::parse::<OutlineRequest>(spec)
                .map_err(ToolError::from)
                .and_then(|r| one(tb, &r.file_path, r.depth.or(default_depth), dirs));
            (path.to_owned(), result)
        }
        other => (untitled(), Err(ToolError::refused(format!("expected object or string, got {}", type_name(other))))),
    }
}

/// A directory's survey: its subdirectories named, its first
/// [`MAX_BATCH`] source files outlined `depth` levels deep.
fn survey(tb: &ToolBox, dir: &Path, depth: usize) -> Result<String, ToolError> {
    let (mut subdirs, mut sources) = (Vec::new(), Vec::new());
    for (name, is_dir) in search::entries(tb, dir) {
        match is_dir {
            true if !name.starts_with('.') && !SKIPPED_DIRS.contains(&name.as_str()) => subdirs.push(name),
            false if is_source(&name) => sources.push(name),
            _ => {}
        }
    }
    subdirs.sort();
    sources.sort_by_key(|n| priority(n));
    let label = tb.policy.display(dir);
    let prefix = if label == "." { String::new() } else { format!("{}/", label.trim_end_matches('/')) };
    let mut header = vec![format!("directory: {}", if prefix.is_empty() { "." } else { &prefix })];
    let subdir_line =
        format!("subdirectories: {}", subdirs.iter().map(|d| format!("{d}/")).collect::<Vec<_>>().join(" "));
    if sources.is_empty() {
        if subdirs.is_empty() {
            header.push("empty directory".into());
        } else {
            header.push(format!("source_files: 0 selected, {} subdirectories", subdirs.len()));
            header.push(subdir_line);
        }
        return Ok(header.join("\n"));
    }
    let omitted = sources.split_off(sources.len().min(MAX_BATCH));
    let entries: Vec<Value> = sources.iter().map(|n| Value::String(format!("{prefix}{n}"))).collect();
    let body = batch(tb, &entries, Some(depth as i64), Dirs::Refuse)?;
    let mut summary = format!("{} selected", sources.len());
    if !omitted.is_empty() {
        let _ = write!(summary, ", {} omitted (over {MAX_BATCH}-file cap)", omitted.len());
    }
    if !subdirs.is_empty() {
        let _ = write!(summary, ", {} subdirectories", subdirs.len());
    }
    header.push(format!("source_files: {summary}"));
    if !subdirs.is_empty() {
        header.push(subdir_line);
    }
    if !omitted.is_empty() {
        header.push(format!("omitted_over_cap: {}", omitted.join(" ")));
    }
    Ok(format!("{}\n\n{body}", header.join("\n")))
}

/// Whether a survey outlines the file `name`.
pub(super) fn is_source(name: &str) -> bool {
    if name.starts_with('.') || GENERATED.contains(&name) || name.ends_with(".min.js") || name.ends_with(".bundle.js") {
        return false;
    }
    let suffix = Path::new(name).extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    SOURCE_NAMES.contains(&name) || suffix.is_some_and(|s| SOURCE_SUFFIXES.contains(&s.as_str()))
}

/// Where a survey lists the file `name`: entry points first, then by name.
fn priority(name: &str) -> (bool, String) {
    let low = name.to_lowercase();
    let entry = ENTRY_POINTS.contains(&low.as_str()) || low.starts_with("main.") || low.starts_with("index.");
    (!entry, low)
}

#[cfg(test)]
mod tests {
    use super::super::test_toolbox as toolbox;
    use super::*;

    const PY: &str = "class Shape:\n    def area(self):\n        return 0\n\n    def name(self):\n        return 's'\n\ndef helper(x):\n    return x\n";

    fn run(tb: &mut ToolBox, args: Value) -> Result<String, ToolError> {
        outline(tb, &args::parse(&args).unwrap())
    }

    #[test]
    fn a_python_file_shows_classes_at_depth_one_and_methods_at_two() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("shapes.py"), PY).unwrap();
        let mut tb = toolbox(d.path());
        let one = run(&mut tb, serde_json::json!({"file_path": "shapes.py", "depth": 1})).unwrap();
        assert_eq!(one, "1    class Shape:\n8    def helper(x)");
        let two = run(&mut tb, serde_json::json!({"file_path": "shapes.py"})).unwrap();
        assert_eq!(two, "1    class Shape:\n2        def area(self)\n5        def name(self)\n8    def helper(x)");
        assert!(!tb.tracker.seen(&d.path().canonicalize().unwrap().join("shapes.py")), "not a read");
    }

    #[test]
    fn a_rust_file_shows_the_functions_of_its_impl_blocks() {
        let d = tempfile::tempdir().unwrap();
        let rs = "pub struct Stack(Vec<u8>);\n\nimpl Stack {\n    pub fn push(&mut self, x: u8) {\n        self.0.push(x);\n    }\n}\n";
        std::fs::write(d.path().join("stack.rs"), rs).unwrap();
        let out = run(&mut toolbox(d.path()), serde_json::json!({"file_path": "stack.rs"})).unwrap();
        assert_eq!(out, "1    pub struct Stack\n3    impl Stack\n4        pub fn push(&mut self, x: u8)");
    }

    #[test]
    fn a_directory_gets_a_shallow_survey_of_its_source_files() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("pkg/sub")).unwrap();
        std::fs::create_dir_all(d.path().join("pkg/node_modules")).unwrap();
        std::fs::write(d.path().join("pkg/shapes.py"), PY).unwrap();
        std::fs::write(d.path().join("pkg/__init__.py"), "VERSION = '1'\n").unwrap();
        std::fs::write(d.path().join("pkg/ignored.py"), "def secret(): pass\n").unwrap();
        std::fs::write(d.path().join("pkg/.gitignore"), "ignored.py\n").unwrap();
        std::fs::write(d.path().join("pkg/data.bin"), "x").unwrap();
        let out = run(&mut toolbox(d.path()), serde_json::json!({"file_path": "pkg"})).unwrap();
        let expected = "directory: pkg/\nsource_files: 2 selected, 1 subdirectories\nsubdirectories: sub/\n\n\
            files_succeeded: 2\nfiles_with_errors: 0\nbatch_truncated: false\n\n\
            === FILE: pkg/__init__.py ===\nstatus: ok\n1    VERSION = ...\n\n\
            === FILE: pkg/shapes.py ===\nstatus: ok\n1    class Shape:\n8    def helper(x)";
        assert_eq!(out, expected);
    }

    #[test]
    fn a_batch_outlines_each_entry_with_its_own_depth_and_errors() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("shapes.py"), PY).unwrap();
        let files = serde_json::json!([{"file_path": "shapes.py", "depth": 1}, "nope.py", 7]);
        let out = run(&mut toolbox(d.path()), serde_json::json!({"files": files, "depth": 2})).unwrap();
        assert!(out.starts_with("files_succeeded: 1\nfiles_with_errors: 2\nbatch_truncated: false\n\n"), "{out}");
        assert!(
            out.contains("=== FILE: shapes.py ===\nstatus: ok\n1    class Shape:\n8    def helper(x)\n\n"),
            "{out}"
        );
        assert!(out.contains("=== FILE: nope.py ===\nstatus: error\nerror: file not found: nope.py"), "{out}");
        assert!(
            out.ends_with("=== FILE: file 3 ===\nstatus: error\nerror: expected object or string, got a number"),
            "{out}"
        );
    }

    #[test]
    fn file_path_and_files_together_or_neither_get_swivals_words() {
        let d = tempfile::tempdir().unwrap();
        let mut tb = toolbox(d.path());
        let both = run(&mut tb, serde_json::json!({"file_path": "a.py", "files": ["b.py"]})).unwrap_err();
        assert_eq!(both.render(), format!("error: {BOTH}"));
        assert_eq!(run(&mut tb, serde_json::json!({})).unwrap_err().render(), format!("error: {NEITHER}"));
        let not_array = run(&mut tb, serde_json::json!({"files": {"file_path": "a.py"}})).unwrap_err();
        assert_eq!(not_array.render(), format!("error: {NOT_AN_ARRAY}"));
        let many: Vec<String> = (0..21).map(|i| format!("f{i}.py")).collect();
        let too_many = run(&mut tb, serde_json::json!({"files": many})).unwrap_err();
        assert_eq!(too_many.render(), "error: too many files requested (21), maximum is 20");
    }

    #[test]
    fn paths_read_file_may_not_read_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("p");
        std::fs::create_dir_all(base.join("keys")).unwrap();
        std::fs::write(d.path().join("outside.py"), PY).unwrap();
        std::fs::write(base.join("keys/k.py"), PY).unwrap();
        let mut tb = toolbox(&base);
        tb.policy.hidden = vec![base.canonicalize().unwrap().join("keys")];
        let outside = run(&mut tb, serde_json::json!({"file_path": "../outside.py"})).unwrap_err().render();
        assert!(outside.contains("outside base directory"), "{outside}");
        let hidden = run(&mut tb, serde_json::json!({"file_path": "keys/k.py"})).unwrap_err().render();
        assert!(hidden.contains("is hidden from the agent"), "{hidden}");
        let survey = run(&mut tb, serde_json::json!({"file_path": "."})).unwrap();
        assert!(!survey.contains("keys") && !survey.contains("Shape"), "{survey}");
        std::os::unix::fs::symlink(d.path().join("outside.py"), base.join("link.py")).unwrap();
        let linked = run(&mut tb, serde_json::json!({"file_path": "."})).unwrap();
        assert!(linked.contains("=== FILE: link.py ===\nstatus: error\nerror: Path 'link.py' resolves to"), "{linked}");
    }

    #[test]
    fn other_files_are_guessed_and_say_so_when_nothing_is_found() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("notes.txt"), "just words\n").unwrap();
        std::fs::write(d.path().join("blob.dat"), b"a\0b").unwrap();
        std::fs::write(d.path().join("m.c"), "int main(void) {\n    return 0;\n}\n").unwrap();
        let mut tb = toolbox(d.path());
        let none = run(&mut tb, serde_json::json!({"file_path": "notes.txt"})).unwrap();
        assert!(none.starts_with("no declarations found: outline parses Python,"), "{none}");
        let binary = run(&mut tb, serde_json::json!({"file_path": "blob.dat"})).unwrap_err().render();
        assert!(binary.starts_with("error: binary file: blob.dat"), "{binary}");
        assert_eq!(run(&mut tb, serde_json::json!({"file_path": "m.c"})).unwrap(), "1    int main(void) {");
    }

    #[test]
    fn a_long_outline_stops_at_max_output_lines() {
        let d = tempfile::tempdir().unwrap();
        let text: String = (0..50).map(|i| format!("def f{i}():\n    pass\n")).collect();
        std::fs::write(d.path().join("many.py"), text).unwrap();
        let mut tb = toolbox(d.path());
        tb.caps.read_lines = 10;
        let out = run(&mut tb, serde_json::json!({"file_path": "many.py"})).unwrap();
        assert_eq!(out.lines().count(), 11);
        assert!(out.ends_with(
            "[outline truncated: 10 of 50 declarations shown; use a smaller depth or outline a narrower path]"
        ));
    }
}
