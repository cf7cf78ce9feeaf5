//! The nudges: every word the loop adds to a conversation on its own, and
//! every loop guard, as one ordered table ([`TABLE`]). Each entry is a
//! kind of the `intervention` event (`InterventionKind`): it fires with
//! an event of that kind, and `disable_nudges` turns it off by name
//! (`storm_breaker = false` turns off the loop guards, as in Swival), so
//! `bench realmodel --ablate NAME` can measure what each one earns.
//!
//! The triggers read no language: whether a reply was empty, cut off or
//! unreadable; whether any tool ran, any write stands, the project holds
//! files, the answer names a file. A task in French gets the same agent
//! as one in English.
//!
//! The nudges about a reply or an answer live here, one file each; the
//! loop guards share one window of calls and live in `guard.rs`, the cap
//! on a reply's calls in `tools.rs`.

pub(super) mod deleted_unasked;
pub(super) mod empty;
pub(super) mod look_first;
pub(super) mod runaway;
pub(super) mod storm;
pub(super) mod truncated;
pub(super) mod unmade;
pub(super) mod unreadable;

use crate::config::SessionConfig;
use std::collections::BTreeSet;
use swival_protocol::InterventionKind;

/// One entry of the table: a kind, where it lives, and when it fires.
#[derive(Debug)]
pub(super) struct Spec {
    /// The kind its event carries, and its name in `disable_nudges`.
    pub(super) kind: InterventionKind,
    /// The file of the daemon that holds its trigger and its words (the
    /// table's test holds it to the tree).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) file: &'static str,
    /// Whether it is one of the loop guards `storm_breaker` turns off.
    pub(super) guard: bool,
}

const fn spec(kind: InterventionKind, file: &'static str, guard: bool) -> Spec {
    Spec { kind, file, guard }
}

/// Every nudge and guard, in the order a turn meets them: the reply
/// (empty, cut off, unreadable, repeating itself, too many calls), each
/// call (refused as a repeat, changing nothing, failing the same way,
/// reading the same again, a change made), the end of a turn (only
/// reads since the change, stuck), and the answer (not looked, a file
/// deleted unasked, no change standing).
pub(super) const TABLE: [Spec; 16] = [
    spec(InterventionKind::Empty, "nudge/empty.rs", false),
    spec(InterventionKind::Truncated, "nudge/truncated.rs", false),
    spec(InterventionKind::Unreadable, "nudge/unreadable.rs", false),
    spec(InterventionKind::Runaway, "nudge/runaway.rs", false),
    spec(InterventionKind::CallCap, "tools.rs", false),
    spec(InterventionKind::Storm, "nudge/storm.rs", true),
    spec(InterventionKind::Unchanged, "guard.rs", true),
    spec(InterventionKind::Nudge, "guard.rs", true),
    spec(InterventionKind::Stop, "guard.rs", true),
    spec(InterventionKind::Reread, "guard.rs", true),
    spec(InterventionKind::DoneHint, "guard.rs", true),
    spec(InterventionKind::Finish, "guard.rs", true),
    spec(InterventionKind::Stuck, "guard.rs", true),
    spec(InterventionKind::LookFirst, "nudge/look_first.rs", false),
    spec(InterventionKind::DeletedUnasked, "nudge/deleted_unasked.rs", false),
    spec(InterventionKind::Unmade, "nudge/unmade.rs", false),
];

/// Which nudges are on for a run.
#[derive(Debug, Clone, Default)]
pub(super) struct Switches {
    off: BTreeSet<InterventionKind>,
}

impl Switches {
    /// The switches `config` sets: `disable_nudges`, and `storm_breaker`
    /// for the loop guards.
    pub(super) fn new(config: &SessionConfig) -> Switches {
        let mut off: BTreeSet<InterventionKind> = config.disable_nudges.iter().copied().collect();
        if !config.storm_breaker {
            off.extend(TABLE.iter().filter(|s| s.guard).map(|s| s.kind));
        }
        Switches { off }
    }

    /// Every nudge on.
    #[cfg(test)]
    pub(super) fn all_on() -> Switches {
        Switches::default()
    }

    /// Switches with `kinds` off.
    #[cfg(test)]
    pub(super) fn with_off(kinds: &[InterventionKind]) -> Switches {
        Switches { off: kinds.iter().copied().collect() }
    }

    /// Whether `kind` may fire.
    pub(super) fn on(&self, kind: InterventionKind) -> bool {
        !self.off.contains(&kind)
    }
}

/// Whether `text` asks something: a sentence of it ends with a question
/// mark, in any script (`?`, full-width `？`, Arabic `؟`). A task that
/// asks is answered, not carried out, and an answer that asks back waits
/// for the user.
pub(super) fn asks(text: &str) -> bool {
    text.contains(['?', '？', '؟'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_lists_every_kind_once_in_the_protocol_order_and_each_file_exists() {
        let kinds: Vec<InterventionKind> = TABLE.iter().map(|s| s.kind).collect();
        assert_eq!(kinds, InterventionKind::ALL);
        let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/agent");
        for spec in &TABLE {
            assert!(here.join(spec.file).is_file(), "{} names {}", spec.kind.name(), spec.file);
        }
    }

    #[test]
    fn storm_breaker_off_turns_off_the_guards_and_only_them() {
        let mut config = SessionConfig { storm_breaker: false, ..SessionConfig::default() };
        config.disable_nudges = vec![InterventionKind::LookFirst];
        let switches = Switches::new(&config);
        for spec in &TABLE {
            let off = spec.guard || spec.kind == InterventionKind::LookFirst;
            assert_eq!(switches.on(spec.kind), !off, "{}", spec.kind.name());
        }
        assert!(Switches::new(&SessionConfig::default()).on(InterventionKind::Storm));
    }

    #[test]
    fn a_question_is_told_by_its_mark_in_any_script() {
        let cases = [
            ("Which function handles /password-reset?", true),
            ("Quelle fonction gère /password-reset ?", true),
            ("哪个函数处理 /password-reset？", true),
            ("Add a clean target to the Makefile.", false),
            ("Ajoute une cible clean au Makefile.", false),
            ("Füge dem Makefile ein clean-Ziel hinzu.", false),
        ];
        for (text, asked) in cases {
            assert_eq!(asks(text), asked, "{text}");
        }
    }
}
