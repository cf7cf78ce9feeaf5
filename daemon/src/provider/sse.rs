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
    /// Reasoning so far (`reasoning_content` deltas).
    reasoning: String,
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
            self.reply.finish_reason = Some(super::FinishReason::parse(&reason));
        }
        let delta = choice.delta.0;
        self.reasoning.push_str(delta.reasoning_content.as_deref().unwrap_or_default());
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
            self.reply.finish_reason = Some(super::FinishReason::Length);
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
        self.reply.reasoning = (!self.reasoning.is_empty()).then_some(self.reasoning);
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
        /// Reasoning, apart from the text (`reasoning_content`).
        #[serde(borrow, default, deserialize_with = "string")]
        pub reasoning_content: Option<Cow<'a, str>>,
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
mod tests;
