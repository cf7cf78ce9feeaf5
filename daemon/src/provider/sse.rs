//! Assembling a streamed chat completion: SSE lines in, one [`Reply`] out,
//! with text deltas reported as they arrive. A reply that keeps repeating
//! itself (`repeat.rs`) is cut where its loop began: the assembler stops
//! taking chunks and says so ([`StreamAssembler::runaway`]), so the reader
//! drops the connection and the server stops generating.

use super::repeat::{Repetition, Runaway};
use super::{ProviderError, Reply, ToolCall};
use serde_json::Value;

/// Accumulates `chat.completion.chunk` events.
#[derive(Debug, Default)]
pub struct StreamAssembler {
    /// Bytes of an incomplete line.
    pending: Vec<u8>,
    /// The reply so far.
    reply: Reply,
    /// Text so far.
    text: String,
    /// Tool calls so far, by stream index.
    calls: Vec<ToolCall>,
    /// `data: [DONE]` was seen.
    done: bool,
    /// A chunk carried a choice (usage-only chunks have `choices: []`).
    saw_choice: bool,
    /// Watches the text for a loop.
    text_loop: Repetition,
    /// Watches each tool call's arguments for a loop, by stream index.
    call_loops: Vec<Repetition>,
    /// The loop the reply was cut at; no chunk is taken after it.
    cut: Option<Runaway>,
}

impl StreamAssembler {
    /// Feed raw bytes; `on_text` gets each text delta.
    pub fn feed(&mut self, bytes: &[u8], on_text: &mut dyn FnMut(&str)) -> Result<(), ProviderError> {
        self.pending.extend_from_slice(bytes);
        // Complete lines are read in place and dropped from the buffer
        // together (dropping each as it is read moved the rest every time).
        let pending = std::mem::take(&mut self.pending);
        let mut read = 0;
        let mut result = Ok(());
        while let Some(offset) = pending[read..].iter().position(|&b| b == b'\n') {
            let line = String::from_utf8_lossy(&pending[read..=read + offset]);
            read += offset + 1;
            if let Err(e) = self.line(line.trim_end_matches(['\r', '\n']), on_text) {
                result = Err(e);
                break;
            }
        }
        self.pending = pending;
        self.pending.drain(..read);
        result
    }

    /// Whether the reply was cut as it repeated itself: read no more of
    /// the stream.
    pub fn runaway(&self) -> bool {
        self.cut.is_some()
    }

    fn line(&mut self, line: &str, on_text: &mut dyn FnMut(&str)) -> Result<(), ProviderError> {
        let Some(data) = line.strip_prefix("data:").filter(|_| self.cut.is_none()) else {
            return Ok(());
        };
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let malformed = |e: serde_json::Error| {
            ProviderError::Malformed(format!("stream chunk is not JSON ({e}): {}", preview(data)))
        };
        let chunk: wire::Chunk<'_> = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            // JSON, but not an object: nothing in it for the reply.
            Err(e) if e.classify() == serde_json::error::Category::Data => return Ok(()),
            Err(e) => return Err(malformed(e)),
        };
        if let Some(err) = chunk.error {
            let err: Value = serde_json::from_str(err.get()).map_err(malformed)?;
            return Err(ProviderError::Transport(format!("provider error in stream: {err}")));
        }
        if let Some(usage) = chunk.usage {
            self.reply.usage = Some(serde_json::from_str(usage.get()).map_err(malformed)?);
        }
        // llama.cpp spreads `timings` over its last chunks: keep them all.
        if let Some(Value::Object(more)) =
            chunk.timings.map(|t| serde_json::from_str(t.get())).transpose().map_err(malformed)?
        {
            match self.reply.timings.get_or_insert_with(|| Value::Object(Default::default())) {
                Value::Object(all) => all.extend(more),
                other => *other = Value::Object(more),
            }
        }
        // Read as leniently as the fields' types allow: a field of another
        // type than expected counts as absent, as it did when chunks were
        // read into a `Value`.
        let Some(choice) = chunk.choices.0 else {
            return Ok(());
        };
        self.saw_choice = true;
        if let Some(reason) = choice.finish_reason {
            self.reply.finish_reason = Some(reason.into_owned());
        }
        let delta = choice.delta.0;
        if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
            self.text.push_str(&text);
            on_text(&text);
            if let Some(found) = self.text_loop.feed(&text) {
                let (runaway, keep) = Runaway::cut(found, &self.text, None);
                self.text.truncate(keep);
                self.cut = Some(runaway);
                return Ok(());
            }
        }
        for tc in delta.tool_calls.0 {
            if self.call_delta(tc) {
                break;
            }
        }
        Ok(())
    }

    /// Add a fragment of a tool call; whether the call's arguments were
    /// cut as they repeated themselves (the reply ends there).
    fn call_delta(&mut self, tc: wire::DeltaCall<'_>) -> bool {
        let index = tc.index.unwrap_or(self.calls.len() as u64) as usize;
        while self.calls.len() <= index {
            self.calls.push(ToolCall { id: String::new(), name: String::new(), arguments: String::new() });
            self.call_loops.push(Repetition::default());
        }
        let call = &mut self.calls[index];
        if let Some(id) = tc.id {
            call.id = id.into_owned();
        }
        let f = tc.function.0;
        if let Some(name) = f.name {
            call.name.push_str(&name);
        }
        if let Some(args) = f.arguments {
            call.arguments.push_str(&args);
            if let Some(found) = self.call_loops[index].feed(&args) {
                let (runaway, keep) = Runaway::cut(found, &call.arguments, Some(index));
                call.arguments.truncate(keep);
                self.cut = Some(runaway);
                return true;
            }
        }
        false
    }

    /// The assembled reply; an error when the stream ended early.
    /// A reply cut as it repeated itself ends as one cut by the output
    /// limit (`length`), with the loop it was cut at.
    pub fn finish(mut self) -> Result<Reply, ProviderError> {
        if let Some(mut cut) = self.cut.take() {
            // Its place among the calls kept (those with a name).
            cut.call = cut.call.map(|i| self.calls[..i].iter().filter(|c| !c.name.is_empty()).count());
            self.reply.finish_reason = Some("length".into());
            self.saw_choice = true;
            self.reply.runaway = Some(cut);
        }
        if !self.done && self.reply.finish_reason.is_none() {
            return Err(ProviderError::Transport("the stream ended before the reply was complete".into()));
        }
        // A complete stream in which no chunk carried a choice is Swival's
        // empty choices list.
        if !self.saw_choice {
            return Err(ProviderError::EmptyChoices);
        }
        self.reply.content = (!self.text.is_empty()).then_some(self.text);
        self.reply.tool_calls = self.calls.into_iter().filter(|c| !c.name.is_empty()).collect();
        Ok(self.reply)
    }
}

/// A `chat.completion.chunk` read in place, in one pass: strings borrowed
/// from the line where they hold no escapes, fields of an unexpected type
/// taken as absent (a nested object that is not one reads as empty).
mod wire {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
    use serde::Deserialize;
    use serde_json::value::RawValue;
    use std::borrow::Cow;
    use std::marker::PhantomData;

    /// One chunk.
    #[derive(Deserialize)]
    pub struct Chunk<'a> {
        /// The first choice, when `choices` is a non-empty array.
        #[serde(borrow, default)]
        pub choices: First<Choice<'a>>,
        /// Token counts, when present and not null.
        #[serde(borrow, default)]
        pub usage: Option<&'a RawValue>,
        /// llama.cpp's timings, when present and not null.
        #[serde(borrow, default)]
        pub timings: Option<&'a RawValue>,
        /// A provider error, when the key is there at all (even null).
        #[serde(borrow, default, deserialize_with = "present")]
        pub error: Option<&'a RawValue>,
    }

    /// One choice of a chunk.
    #[derive(Deserialize, Default)]
    pub struct Choice<'a> {
        /// Why the reply ended, on its last chunk.
        #[serde(borrow, default, deserialize_with = "string")]
        pub finish_reason: Option<Cow<'a, str>>,
        /// What this chunk adds.
        #[serde(borrow, default)]
        pub delta: Object<Delta<'a>>,
    }

    /// What a chunk adds to the reply.
    #[derive(Deserialize, Default)]
    pub struct Delta<'a> {
        /// Text.
        #[serde(borrow, default, deserialize_with = "string")]
        pub content: Option<Cow<'a, str>>,
        /// Fragments of tool calls.
        #[serde(borrow, default)]
        pub tool_calls: Items<DeltaCall<'a>>,
    }

    /// A fragment of one tool call.
    #[derive(Deserialize, Default)]
    pub struct DeltaCall<'a> {
        /// Which call of the reply it belongs to.
        #[serde(default, deserialize_with = "number")]
        pub index: Option<u64>,
        /// The call's id, on its first fragment.
        #[serde(borrow, default, deserialize_with = "string")]
        pub id: Option<Cow<'a, str>>,
        /// Name and argument text so far.
        #[serde(borrow, default)]
        pub function: Object<DeltaFunction<'a>>,
    }

    /// A fragment of a call's function.
    #[derive(Deserialize, Default)]
    pub struct DeltaFunction<'a> {
        /// A piece of its name.
        #[serde(borrow, default, deserialize_with = "string")]
        pub name: Option<Cow<'a, str>>,
        /// A piece of its arguments' text.
        #[serde(borrow, default, deserialize_with = "string")]
        pub arguments: Option<Cow<'a, str>>,
    }

    /// `T` read from a JSON object; `T`'s empty value when the field
    /// holds anything else.
    #[derive(Default)]
    pub struct Object<T>(pub T);

    /// The first item of a JSON array (read as an [`Object`]); none when
    /// the array is empty or the field holds anything else.
    #[derive(Default)]
    pub struct First<T>(pub Option<T>);

    /// The items of a JSON array, each read as an [`Object`]; none when
    /// the field holds anything else.
    #[derive(Default)]
    pub struct Items<T>(pub Vec<T>);

    /// What a lenient nested field makes of the JSON value it holds: an
    /// object (`map`), an array (`seq`), or anything else (`empty`). The
    /// shapes not wanted are read through and give `empty`.
    trait Shape<'de>: Sized {
        fn empty() -> Self;
        fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(Self::empty())
        }
        fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Self::empty())
        }
    }

    impl<'de, T: Deserialize<'de> + Default> Shape<'de> for Object<T> {
        fn empty() -> Self {
            Object(T::default())
        }
        fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
            T::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(Object)
        }
    }

    impl<'de, T: Deserialize<'de> + Default> Shape<'de> for First<T> {
        fn empty() -> Self {
            First(None)
        }
        fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
            let first = seq.next_element::<Object<T>>()?.map(|o| o.0);
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(First(first))
        }
    }

    impl<'de, T: Deserialize<'de> + Default> Shape<'de> for Items<T> {
        fn empty() -> Self {
            Items(Vec::new())
        }
        fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
            let mut items = Vec::new();
            while let Some(item) = seq.next_element::<Object<T>>()? {
                items.push(item.0);
            }
            Ok(Items(items))
        }
    }

    /// Reads any JSON value into a [`Shape`].
    struct ShapeVisitor<S>(PhantomData<S>);

    impl<'de, S: Shape<'de>> Visitor<'de> for ShapeVisitor<S> {
        type Value = S;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<S, E> {
            Ok(S::empty())
        }
        fn visit_i64<E>(self, _: i64) -> Result<S, E> {
            Ok(S::empty())
        }
        fn visit_u64<E>(self, _: u64) -> Result<S, E> {
            Ok(S::empty())
        }
        fn visit_f64<E>(self, _: f64) -> Result<S, E> {
            Ok(S::empty())
        }
        fn visit_str<E>(self, _: &str) -> Result<S, E> {
            Ok(S::empty())
        }
        fn visit_unit<E>(self) -> Result<S, E> {
            Ok(S::empty())
        }
        fn visit_none<E>(self) -> Result<S, E> {
            Ok(S::empty())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<S, A::Error> {
            S::seq(seq)
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<S, A::Error> {
            S::map(map)
        }
    }

    macro_rules! lenient {
        ($($shape:ident),*) => {$(
            impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for $shape<T> {
                fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                    d.deserialize_any(ShapeVisitor(PhantomData))
                }
            }
        )*};
    }
    lenient!(Object, First, Items);

    /// A field that counts as present whatever it holds, null included.
    fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
        <&RawValue>::deserialize(d).map(Some)
    }

    /// A string, or absent when the field holds anything else.
    fn string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
        d.deserialize_any(Lenient(|v: Scalar<'de>| match v {
            Scalar::Str(s) => Some(s),
            Scalar::Number(_) => None,
        }))
    }

    /// A whole number, or absent when the field holds anything else.
    fn number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        d.deserialize_any(Lenient(|v: Scalar<'de>| match v {
            Scalar::Number(n) => Some(n),
            Scalar::Str(_) => None,
        }))
    }

    /// The scalars a lenient field may want.
    enum Scalar<'de> {
        Str(Cow<'de, str>),
        Number(u64),
    }

    /// Accepts any JSON value; `pick` keeps the scalars it wants.
    struct Lenient<F>(F);

    impl<'de, T, F: FnOnce(Scalar<'de>) -> Option<T>> Visitor<'de> for Lenient<F> {
        type Value = Option<T>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok((self.0)(Scalar::Str(Cow::Borrowed(v))))
        }
        fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
            Ok((self.0)(Scalar::Str(Cow::Owned(v.to_owned()))))
        }
        fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
            Ok((self.0)(Scalar::Str(Cow::Owned(v))))
        }
        fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
            Ok((self.0)(Scalar::Number(v)))
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(None)
        }
    }
}

/// The first 200 characters of a payload, for error messages.
pub fn preview(s: &str) -> String {
    let cut: String = s.chars().take(200).collect();
    if cut.len() < s.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn assemble(input: &str) -> (Result<Reply, ProviderError>, Vec<String>) {
        let mut a = StreamAssembler::default();
        let mut deltas = Vec::new();
        let fed = a.feed(input.as_bytes(), &mut |t| deltas.push(t.to_owned()));
        (fed.and_then(|_| a.finish()), deltas)
    }

    #[test]
    fn text_deltas_are_joined_and_reported() {
        let (r, d) = assemble(
            "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
        );
        let r = r.unwrap();
        assert_eq!(r.content.as_deref(), Some("Hello"));
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
        assert_eq!(d, ["Hel", "lo"]);
    }

    #[test]
    fn tool_call_fragments_are_assembled_by_index() {
        let (r, _) = assemble(concat!(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"\"}}]}}]}\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"file_path\\\":\"}}]}}]}\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"a.txt\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n",
            "data: [DONE]\n"
        ));
        let r = r.unwrap();
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.tool_calls[0].id, "c1");
        assert_eq!(r.tool_calls[0].arguments, "{\"file_path\":\"a.txt\"}");
    }

    #[test]
    fn a_complete_stream_without_a_choice_is_an_empty_choices_list() {
        let (r, _) = assemble("data: {\"choices\":[],\"usage\":{\"total_tokens\":3}}\n\ndata: [DONE]\n\n");
        assert!(matches!(r, Err(ProviderError::EmptyChoices)), "{r:?}");
    }

    #[test]
    fn stream_cut_before_the_end_is_an_error() {
        let (r, _) = assemble("data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n");
        assert!(matches!(r, Err(ProviderError::Transport(_))));
    }

    #[test]
    fn fields_of_an_unexpected_type_count_as_absent() {
        let (r, d) = assemble(concat!(
            "data: 5\n",
            "data: {\"choices\":{}}\n",
            "data: {\"choices\":[{\"delta\":{\"content\":7}}]}\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"a\\nb\",\"tool_calls\":[{\"index\":-1,\"id\":3,\"function\":{\"name\":\"x\"}}]}}]}\n",
            "data: {\"choices\":[{\"finish_reason\":\"stop\",\"delta\":[]}],\"usage\":null}\n",
            "data: [DONE]\n"
        ));
        let r = r.unwrap();
        assert_eq!(d, ["a\nb"], "an escaped string is read too");
        assert_eq!((r.content.as_deref(), r.finish_reason.as_deref()), (Some("a\nb"), Some("stop")));
        assert_eq!((r.tool_calls.len(), r.tool_calls[0].id.as_str(), r.tool_calls[0].name.as_str()), (1, "", "x"));
        assert!(r.usage.is_none());
    }

    #[test]
    fn an_error_key_ends_the_stream_even_when_null() {
        let (r, _) = assemble("data: {\"error\":{\"message\":\"overloaded\"}}\n");
        assert!(matches!(&r, Err(ProviderError::Transport(m)) if m.contains("overloaded")), "{r:?}");
        let (r, _) = assemble("data: {\"error\":null}\n");
        assert!(matches!(&r, Err(ProviderError::Transport(m)) if m.ends_with("null")), "{r:?}");
    }

    #[test]
    fn truncated_json_chunk_is_malformed() {
        let (r, _) = assemble("data: {\"choices\":[{\"delta\":{\"cont\n");
        assert!(matches!(r, Err(ProviderError::Malformed(_))));
    }

    #[test]
    fn a_reply_repeating_a_line_is_cut_after_its_first_copy_and_ends_as_cut_by_the_limit() {
        let mut a = StreamAssembler::default();
        let chunk = |t: &str| format!("data: {}\n\n", json!({"choices": [{"delta": {"content": t}}]}));
        a.feed(chunk("Sure:\n").as_bytes(), &mut |_| {}).unwrap();
        let mut fed = 0;
        while !a.runaway() {
            a.feed(chunk("same line\n").as_bytes(), &mut |_| {}).unwrap();
            fed += 1;
            assert!(fed < 1000, "never cut");
        }
        // Chunks after the cut are not taken.
        a.feed(chunk("more").as_bytes(), &mut |_| {}).unwrap();
        let r = a.finish().unwrap();
        assert_eq!(r.content.as_deref(), Some("Sure:\nsame line"));
        assert_eq!(r.finish_reason.as_deref(), Some("length"));
        let cut = r.runaway.unwrap();
        assert_eq!((cut.call, cut.unit.as_str()), (None, "\nsame line"));
        assert!(cut.repeats >= 16, "{cut:?}");
    }

    #[test]
    fn a_tool_call_whose_arguments_repeat_is_cut_and_named_by_its_place() {
        let mut a = StreamAssembler::default();
        let call = |delta: Value| format!("data: {}\n\n", json!({"choices": [{"delta": {"tool_calls": [delta]}}]}));
        let first = json!({"index": 0, "id": "a", "function": {"name": "think", "arguments": "{}"}});
        a.feed(call(first).as_bytes(), &mut |_| {}).unwrap();
        let second =
            json!({"index": 1, "id": "b", "function": {"name": "write_file", "arguments": "{\"content\": \""}});
        a.feed(call(second).as_bytes(), &mut |_| {}).unwrap();
        while !a.runaway() {
            a.feed(call(json!({"index": 1, "function": {"arguments": "x = 1\\n"}})).as_bytes(), &mut |_| {}).unwrap();
        }
        let r = a.finish().unwrap();
        assert_eq!(r.runaway.unwrap().call, Some(1));
        assert_eq!(r.tool_calls.len(), 2);
        assert!(r.tool_calls[1].arguments.len() < 100, "{}", r.tool_calls[1].arguments);
    }

    /// A stream as llama.cpp's llama-server sends it: a role-only first
    /// chunk with `content: null`, a 32-character id without `call_`, the
    /// model's raw argument text in fragments carrying only `index`, an
    /// empty finish delta, a usage-only last chunk with `choices: []`, and
    /// fields of its own (`timings`, `system_fingerprint`).
    #[test]
    fn a_llama_server_stream_is_assembled() {
        let id = "Xq3vN8kPz2LmT7wRbC5yH1dJ9sFgA4eU";
        let chunks = [
            json!({"choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}],"system_fingerprint":"b1-abc","object":"chat.completion.chunk"}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":id,"type":"function","function":{"name":"edit_file","arguments":"{\n  \"file_path\": \"a.py\",\n"}}]},"finish_reason":null}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"  \"old_string\": \"x = 1\",\n  \"new_string\": \"x = 2\"\n}"}}]},"finish_reason":null}]}),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"timings":{"prompt_n":812,"predicted_n":41}}),
            json!({"choices":[],"usage":{"prompt_tokens":812,"completion_tokens":41,"total_tokens":853},"timings":{"prompt_ms":9000.5}}),
        ];
        let mut input: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
        input.push_str("data: [DONE]\n\n");
        let (r, deltas) = assemble(&input);
        let r = r.unwrap();
        assert!(deltas.is_empty(), "no text: {deltas:?}");
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.tool_calls[0].id, id);
        assert_eq!(r.tool_calls[0].name, "edit_file");
        let args: Value = serde_json::from_str(&r.tool_calls[0].arguments).unwrap();
        assert_eq!(args, json!({"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}));
        assert_eq!(r.usage.as_ref().unwrap()["prompt_tokens"], 812);
        assert_eq!(r.timings, Some(json!({"prompt_n": 812, "predicted_n": 41, "prompt_ms": 9000.5})));
        // Sent back as llama-server expects it: the id as it came.
        assert_eq!(r.to_message().to_value()["tool_calls"][0]["id"], id);
    }
}
