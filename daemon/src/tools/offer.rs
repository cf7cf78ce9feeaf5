//! What a run offers the model: the tools' schemas in Swival's order
//! (`registry::in_order`), serialised once per distinct offer, in
//! Swival's words or lean ones ([`SchemaStyle`], `lean.rs`).

use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The file, search and bookkeeping tools, in the order the model sees
/// them; reads return `read_lines` lines unless they name a `limit`. Built
/// once per `read_lines` the daemon has seen (a handful of configured
/// values) and copied from there.
pub fn file_tools(read_lines: usize) -> Vec<Value> {
    static BUILT: Mutex<Option<HashMap<usize, Arc<[Value]>>>> = Mutex::new(None);
    let built = {
        let mut cache = BUILT.lock().unwrap_or_else(|p| p.into_inner());
        let cache = cache.get_or_insert_with(HashMap::new);
        cache.entry(read_lines).or_insert_with(|| super::registry::builtin_schemas(read_lines).into()).clone()
    };
    built.to_vec()
}

/// How a run's offer words the tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SchemaStyle {
    /// Swival's schemas, byte for byte.
    Swival,
    /// Short descriptions and the rarely needed parameters left out, for
    /// small local models (`lean_tools`, see `lean.rs`).
    Lean,
}

impl SchemaStyle {
    /// The style `lean_tools` asks for.
    pub fn lean_if(lean: bool) -> SchemaStyle {
        if lean {
            SchemaStyle::Lean
        } else {
            SchemaStyle::Swival
        }
    }
}

/// The tools a run offers the model, serialised once: every call of the
/// run sends them unchanged.
#[derive(Debug)]
pub struct Offer {
    /// The schemas, in the order the model sees them.
    pub schemas: Vec<Value>,
    /// `schemas` as the JSON array sent.
    pub json: Box<RawValue>,
    /// The length of each schema's compact JSON, summed (the token
    /// estimate counts them so).
    pub chars: usize,
    /// Swival's schemas when `schemas` is a lean offer (`None`: they are
    /// `schemas`).
    full: Option<Vec<Value>>,
}

/// Distinct offers kept by [`Offer::shared`]; past it the memo starts over.
const SHARED_OFFERS: usize = 32;

/// The offers made so far, by `read_lines`, style and the other tools' JSON.
type Offers = HashMap<(usize, SchemaStyle, String), Arc<Offer>>;

impl Offer {
    /// Offer `schemas`.
    pub fn new(schemas: Vec<Value>) -> Offer {
        let json = serde_json::value::to_raw_value(&schemas).expect("tool schemas serialize");
        // The array's compact JSON less its brackets and the commas between items.
        let chars = json.get().len() - 2 - schemas.len().saturating_sub(1);
        Offer { schemas, json, chars, full: None }
    }

    /// Offer `full` (Swival's schemas) in `style`.
    pub fn styled(full: Vec<Value>, style: SchemaStyle) -> Offer {
        match style {
            SchemaStyle::Swival => Offer::new(full),
            SchemaStyle::Lean => Offer { full: Some(full.clone()), ..Offer::new(super::lean::cut(&full)) },
        }
    }

    /// The schemas calls are checked and repaired against: Swival's, with
    /// every parameter each tool takes, whether the offer names it or not
    /// (a lean offer leaves some out that a model may still send).
    pub fn taken(&self) -> &[Value] {
        self.full.as_deref().unwrap_or(&self.schemas)
    }

    /// The file tools for `read_lines` with `more` (the command tools) in
    /// their places (`registry::in_order`), in `style`, made once per
    /// distinct triple and shared by the runs offering it: building and
    /// serialising them was a run's largest fixed cost, and a run's
    /// offer must not change between its calls.
    pub fn shared(read_lines: usize, style: SchemaStyle, more: Vec<Value>) -> Arc<Offer> {
        static MADE: Mutex<Option<Offers>> = Mutex::new(None);
        let key = (read_lines, style, serde_json::to_string(&more).expect("tool schemas serialize"));
        let mut made = MADE.lock().unwrap_or_else(|p| p.into_inner());
        let made = made.get_or_insert_with(HashMap::new);
        if let Some(offer) = made.get(&key) {
            return offer.clone();
        }
        if made.len() >= SHARED_OFFERS {
            made.clear();
        }
        let schemas = super::registry::in_order(file_tools(read_lines), more);
        let offer = Arc::new(Offer::styled(schemas, style));
        made.insert(key, offer.clone());
        offer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_offer_counts_what_the_estimate_would_and_sends_the_schemas_as_they_are() {
        for schemas in [Vec::new(), file_tools(7), vec![json!({"type": "function", "function": {"name": "x"}})]] {
            let offer = Offer::new(schemas.clone());
            let each: usize = schemas.iter().map(|s| s.to_string().len()).sum();
            assert_eq!(offer.chars, each);
            assert_eq!(offer.json.get(), serde_json::to_string(&schemas).unwrap());
        }
    }

    #[test]
    fn a_shared_offer_is_made_once_per_file_tools_and_command_tools() {
        let more = vec![json!({"type": "function", "function": {"name": "fetch_url"}})];
        let a = Offer::shared(11, SchemaStyle::Swival, more.clone());
        assert!(Arc::ptr_eq(&a, &Offer::shared(11, SchemaStyle::Swival, more.clone())));
        assert!(!Arc::ptr_eq(&a, &Offer::shared(12, SchemaStyle::Swival, more.clone())));
        assert!(!Arc::ptr_eq(&a, &Offer::shared(11, SchemaStyle::Swival, Vec::new())));
        let names: Vec<&str> = a.schemas.iter().filter_map(super::super::repair::name_of).collect();
        let at = |n: &str| names.iter().position(|m| *m == n).unwrap();
        assert_eq!(names.len(), file_tools(11).len() + 1);
        assert_eq!((at("delete_file") + 1, at("fetch_url") + 1), (at("fetch_url"), at("outline")), "{names:?}");
    }

    #[test]
    fn a_lean_offer_is_shared_apart_from_the_full_one_and_repairs_against_it() {
        let more = vec![json!({"type": "function", "function": {"name": "fetch_url"}})];
        let full = Offer::shared(13, SchemaStyle::Swival, more.clone());
        let lean = Offer::shared(13, SchemaStyle::Lean, more.clone());
        assert!(!Arc::ptr_eq(&full, &lean));
        assert!(Arc::ptr_eq(&lean, &Offer::shared(13, SchemaStyle::Lean, more)));
        assert!(lean.chars < full.chars && lean.schemas != full.schemas);
        assert_eq!(lean.taken(), full.schemas, "calls are repaired against Swival's schemas");
        assert_eq!(full.taken(), full.schemas);
    }
}
