//! Line numbers for manifest nodes.
//!
//! serde_yaml keeps no positions in the values it returns. So the text is read once more, with the
//! parser serde_yaml is built on (libyaml, `yaml_events.rs`), whose events carry the very lines
//! serde_yaml puts in its errors; they are gathered into a tree of nodes, each with its line
//! (an alias stands for its anchored node, as serde_yaml reads it). A lookup walks its path down
//! the tree. This is exact for every YAML style (block, flow, anchors), unlike scanning lines by
//! hand, and linear in the text: the tree is built once, on the first lookup, and a lookup only
//! costs the length of its path (plus the keys of the mappings on it).

use super::yaml_events::{Event, Events};
use std::cell::OnceCell;
use std::collections::HashMap;

/// One step of a path into the document.
#[derive(Clone, Copy, Debug)]
pub enum Step<'a> {
    /// A mapping key; as the last step, the line of the key itself.
    Key(&'a str),
    /// A sequence element.
    Index(usize),
}

/// Looks up lines in one manifest text.
pub struct SourceMap<'t> {
    text: &'t str,
    tree: OnceCell<Tree>,
}

impl<'t> SourceMap<'t> {
    pub fn new(text: &'t str) -> Self {
        SourceMap {
            text,
            tree: OnceCell::new(),
        }
    }

    /// The 1-based line of the node at `path` (of the root node for an empty path), or `None`
    /// when there is no such node.
    pub fn line(&self, path: &[Step]) -> Option<usize> {
        let tree = self.tree.get_or_init(|| Tree::build(self.text));
        let mut node = tree.root?;
        for (i, step) in path.iter().enumerate() {
            match (step, &tree.nodes[node].kind) {
                (Step::Key(key), Kind::Mapping(pairs)) => {
                    let &(k, v) = pairs.iter().find(|&&(k, _)| tree.is_scalar(k, key))?;
                    if i + 1 == path.len() {
                        return Some(tree.nodes[k].line);
                    }
                    node = v;
                }
                (Step::Index(index), Kind::Sequence(items)) => node = *items.get(*index)?,
                _ => return None,
            }
        }
        Some(tree.nodes[node].line)
    }
}

/// The nodes of the first document.
struct Tree {
    nodes: Vec<Node>,
    root: Option<usize>,
}

struct Node {
    line: usize,
    kind: Kind,
}

enum Kind {
    Scalar(Box<[u8]>),
    /// Node ids of the elements.
    Sequence(Vec<usize>),
    /// Node ids of the keys and values, in order.
    Mapping(Vec<(usize, usize)>),
}

impl Tree {
    fn build(text: &str) -> Tree {
        let mut tree = Tree {
            nodes: Vec::new(),
            root: None,
        };
        // An anchor names the latest node defined with it (serde_yaml's rule too).
        let mut anchors: HashMap<Vec<u8>, usize> = HashMap::new();
        // Open collections, each with the key of a mapping pair waiting for its value.
        let mut open: Vec<(usize, Option<usize>)> = Vec::new();
        for (event, line) in Events::new(text) {
            let (kind, anchor) = match event {
                Event::DocumentStart => continue,
                Event::DocumentEnd => break,
                Event::SequenceEnd | Event::MappingEnd => {
                    open.pop();
                    continue;
                }
                Event::Alias { anchor } => match anchors.get(&anchor) {
                    Some(&id) => {
                        tree.attach(&mut open, id);
                        continue;
                    }
                    None => break, // serde_yaml rejects the text
                },
                Event::Scalar { anchor, value } => (Kind::Scalar(value.into()), anchor),
                Event::SequenceStart { anchor } => (Kind::Sequence(Vec::new()), anchor),
                Event::MappingStart { anchor } => (Kind::Mapping(Vec::new()), anchor),
            };
            let id = tree.nodes.len();
            let collection = !matches!(kind, Kind::Scalar(_));
            tree.nodes.push(Node { line, kind });
            if let Some(anchor) = anchor {
                anchors.insert(anchor, id);
            }
            tree.attach(&mut open, id);
            if collection {
                open.push((id, None));
            }
        }
        tree
    }

    /// Adds node `id` to the innermost open collection (or makes it the root).
    fn attach(&mut self, open: &mut [(usize, Option<usize>)], id: usize) {
        let Some((parent, key)) = open.last_mut() else {
            self.root.get_or_insert(id);
            return;
        };
        match &mut self.nodes[*parent].kind {
            Kind::Sequence(items) => items.push(id),
            Kind::Mapping(pairs) => match key.take() {
                Some(k) => pairs.push((k, id)),
                None => *key = Some(id),
            },
            Kind::Scalar(_) => unreachable!("only collections are open"),
        }
    }

    /// Whether node `id` is the scalar `text`.
    fn is_scalar(&self, id: usize, text: &str) -> bool {
        matches!(&self.nodes[id].kind, Kind::Scalar(s) if **s == *text.as_bytes())
    }
}

/// What a manifest may not have even though serde_yaml would read it (slowly, or into all the
/// memory there is).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Excess {
    /// More than the given number of nodes added by aliases (serde_yaml reads an alias as a copy
    /// of its anchored node): a few lines of aliases of aliases can stand for billions of nodes.
    Aliases,
    /// Collections nested deeper than the given depth. serde_yaml refuses those anyway (its
    /// recursion limit is 128), but only after libyaml has read the whole text, in time quadratic in
    /// the depth of flow collections (a file of 100,000 `[`s takes minutes).
    Depth,
}

/// The first excess of `text` and its line (that of the alias that passes `max_alias_nodes`, or
/// of the collection that passes `max_depth`), reading the events once and only up to there.
pub fn excess(text: &str, max_alias_nodes: u64, max_depth: usize) -> Option<(Excess, usize)> {
    // The expanded size of each anchored node; sizes of the open collections so far.
    let mut sizes: HashMap<Vec<u8>, u64> = HashMap::new();
    let mut open: Vec<(u64, Option<Vec<u8>>)> = Vec::new();
    let mut added = 0u64;
    for (event, line) in Events::new(text) {
        let size = match event {
            Event::DocumentStart | Event::DocumentEnd => continue,
            Event::SequenceStart { anchor } | Event::MappingStart { anchor } => {
                if open.len() == max_depth {
                    return Some((Excess::Depth, line));
                }
                open.push((1, anchor));
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let Some((size, anchor)) = open.pop() else {
                    continue;
                };
                if let Some(anchor) = anchor {
                    sizes.insert(anchor, size);
                }
                size
            }
            Event::Scalar { anchor, .. } => {
                if let Some(anchor) = anchor {
                    sizes.insert(anchor, 1);
                }
                1
            }
            // An alias of a node still open (a cycle) is serde_yaml's to reject.
            Event::Alias { anchor } => {
                let size = sizes.get(&anchor).copied().unwrap_or(1);
                added = added.saturating_add(size);
                if added > max_alias_nodes {
                    return Some((Excess::Aliases, line));
                }
                size
            }
        };
        if let Some((parent, _)) = open.last_mut() {
            *parent = parent.saturating_add(size);
        }
    }
    None
}

/// The number of the text's last line (at least 1), counting line breaks as libyaml does (`\n`,
/// `\r\n`, `\r`, NEL, LS, PS). libyaml puts the end of the input one line further when the
/// text does not end with a line break; problems there are shown on this line instead.
pub fn last_line(text: &str) -> usize {
    let mut breaks = 0;
    let mut ends_with_break = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        ends_with_break = match c {
            '\r' => {
                chars.next_if_eq(&'\n');
                true
            }
            '\n' | '\u{85}' | '\u{2028}' | '\u{2029}' => true,
            _ => false,
        };
        breaks += usize::from(ends_with_break);
    }
    if ends_with_break {
        breaks.max(1)
    } else {
        breaks + 1
    }
}

/// A line for a YAML error that serde_yaml gives no position for: the start of the second
/// document for "more than one document", the first alias for "repetition limit exceeded" (an
/// alias that expands too much), the last line for an unexpected end; otherwise the first node's
/// line, or 1.
pub fn unlocated_error_line(text: &str, message: &str) -> usize {
    let mut events = Events::new(text);
    let found = if message.contains("more than one document") {
        events
            .filter(|(e, _)| *e == Event::DocumentStart)
            .nth(1)
            .map(|(_, line)| line)
    } else if message.contains("repetition limit") {
        events
            .find(|(e, _)| matches!(e, Event::Alias { .. }))
            .map(|(_, line)| line)
    } else if message.contains("EOF") {
        Some(last_line(text))
    } else {
        events
            .find(|(e, _)| *e != Event::DocumentStart)
            .map(|(_, line)| line)
    };
    found.unwrap_or(1)
}

/// The previous implementation (one serde_yaml parse per lookup, which made error reporting
/// quadratic), kept as the oracle the tree's lines must agree with.
#[cfg(test)]
mod probe_oracle {
    use super::Step;
    use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
    use std::fmt;

    /// The error message that marks "found it"; never shown to users.
    const FOUND: &str = "\u{0}source-map-probe";

    /// The line of the node at `path`, by re-reading the text up to it (one parse per lookup).
    pub fn line(text: &str, path: &[Step]) -> Option<usize> {
        let err = Probe(path)
            .deserialize(serde_yaml::Deserializer::from_str(text))
            .err()?;
        if err.to_string().contains(FOUND) {
            err.location().map(|loc| loc.line())
        } else {
            None
        }
    }

    /// Walks `path` down from the node it is given.
    struct Probe<'p>(&'p [Step<'p>]);

    impl<'de> DeserializeSeed<'de> for Probe<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            // Going through `deserialize_any` lets serde_yaml stamp our error with this node's mark.
            d.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Probe<'_> {
        type Value = ();

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("any YAML node")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let Some((Step::Key(key), rest)) = self.0.split_first() else {
                return self.scalar();
            };
            while let Some(hit) = map.next_key_seed(KeyProbe {
                key,
                last: rest.is_empty(),
            })? {
                if hit {
                    return map.next_value_seed(Probe(rest));
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            let Some((Step::Index(index), rest)) = self.0.split_first() else {
                return self.scalar();
            };
            for _ in 0..*index {
                if seq.next_element::<IgnoredAny>()?.is_none() {
                    return Ok(());
                }
            }
            seq.next_element_seed(Probe(rest)).map(|_| ())
        }

        fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
            self.scalar()
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
            self.scalar()
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
            self.scalar()
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
            self.scalar()
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
            self.scalar()
        }
        fn visit_unit<E: de::Error>(self) -> Result<(), E> {
            self.scalar()
        }
    }

    impl Probe<'_> {
        /// A node that cannot be walked into: it is the target if the path ends here.
        fn scalar<E: de::Error>(self) -> Result<(), E> {
            if self.0.is_empty() {
                Err(E::custom(FOUND))
            } else {
                Ok(())
            }
        }
    }

    /// Reads one mapping key: `Ok(true)` if it is `key`, or the "found" error if it is `key` and the
    /// last step of the path (so the error carries the key's own position).
    struct KeyProbe<'k> {
        key: &'k str,
        last: bool,
    }

    impl<'de> DeserializeSeed<'de> for KeyProbe<'_> {
        type Value = bool;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for KeyProbe<'_> {
        type Value = bool;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a mapping key")
        }

        fn visit_str<E: de::Error>(self, s: &str) -> Result<bool, E> {
            match (s == self.key, self.last) {
                (true, true) => Err(E::custom(FOUND)),
                (hit, _) => Ok(hit),
            }
        }
        // Keys that are not strings are never what we look for.
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
            Ok(false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{SourceMap, Step};

    #[test]
    fn finds_keys_entries_and_elements() {
        let text = "version: 1\noperations:\n  # a comment\n  - kind: gemm\n    tile:\n      - [1, 2, 3]\n      - [4, 5, 6]\n  - {kind: gemm, a: f16}\n";
        let map = SourceMap::new(text);
        assert_eq!(map.line(&[Step::Key("version")]), Some(1));
        assert_eq!(map.line(&[Step::Key("operations"), Step::Index(0)]), Some(4));
        let tile = [Step::Key("operations"), Step::Index(0), Step::Key("tile")];
        assert_eq!(map.line(&tile), Some(5));
        let second = [tile[0], tile[1], tile[2], Step::Index(1)];
        assert_eq!(map.line(&second), Some(7));
        assert_eq!(
            map.line(&[Step::Key("operations"), Step::Index(1), Step::Key("a")]),
            Some(8)
        );
        assert_eq!(map.line(&[Step::Key("operations"), Step::Index(2)]), None);
        assert_eq!(
            map.line(&[Step::Key("operations"), Step::Index(0), Step::Key("b")]),
            None
        );
    }

    #[test]
    fn flow_styles_anchors_and_empty_collections() {
        let text = "version: 1\noperations:\n  - &e\n    kind: gemm\n    tile: [\n      [1, 2, 3],\n      []]\n  - *e\n  -\n    {\n      kind: gemm}\n  - {}\n";
        let map = SourceMap::new(text);
        let op = |i| [Step::Key("operations"), Step::Index(i)];
        // A mapping starts at its anchor; an alias is its anchored node.
        assert_eq!(map.line(&op(0)), Some(3));
        assert_eq!(map.line(&op(1)), Some(3));
        assert_eq!(map.line(&[op(1)[0], op(1)[1], Step::Key("kind")]), Some(4));
        // A flow mapping starts at its brace.
        assert_eq!(map.line(&op(2)), Some(10));
        assert_eq!(map.line(&[op(2)[0], op(2)[1], Step::Key("kind")]), Some(11));
        assert_eq!(map.line(&op(3)), Some(12));
        let tile = |i| {
            [
                Step::Key("operations"),
                Step::Index(0),
                Step::Key("tile"),
                Step::Index(i),
            ]
        };
        assert_eq!(map.line(&tile(0)), Some(6));
        assert_eq!(map.line(&tile(1)), Some(7));
        assert_eq!(map.line(&tile(2)), None);
        assert_eq!(map.line(&[]), Some(1));
        assert_eq!(SourceMap::new("").line(&[]), None);
        assert_eq!(
            SourceMap::new("# only a comment\n").line(&[Step::Key("version")]),
            None
        );
    }

    #[test]
    fn excess_aliases_and_depth_are_found_without_expanding() {
        use super::{excess, Excess};
        let aliases = |text: &str, limit| excess(text, limit, 128);
        let mut bomb = String::from("a0: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n");
        for k in 1..40 {
            let refs = vec![format!("*a{}", k - 1); 10].join(", ");
            bomb.push_str(&format!("a{k}: &a{k} [{refs}]\n"));
        }
        // Lines 2 to 5 add 10 * (11 + 111 + 1111 + 11111) nodes, each alias of line 6 111111 more:
        // its eighth passes a million.
        assert_eq!(aliases(&bomb, 1_000_000), Some((Excess::Aliases, 6)));
        assert_eq!(aliases("a: &x [1, 2]\nb: [*x, *x]\n", 6), None);
        assert_eq!(
            aliases("a: &x [1, 2]\nb: [*x, *x]\n", 5),
            Some((Excess::Aliases, 2))
        );
        assert_eq!(aliases("a: [1, 2]\n", 0), None);
        // 128 collections in each other are fine (the root mapping counts), the 129th is not; a
        // deep text is read only up to there.
        let nested = |depth: usize| format!("a: 1\nb:\n  {}1{}\n", "[\n".repeat(depth), "]".repeat(depth));
        assert_eq!(excess(&nested(127), 10, 128), None);
        assert_eq!(excess(&nested(128), 10, 128), Some((Excess::Depth, 130)));
        assert_eq!(excess(&nested(300_000), 10, 128), Some((Excess::Depth, 130)));
    }

    #[test]
    fn last_lines() {
        use super::last_line;
        for (text, line) in [
            ("", 1),
            ("\n", 1),
            ("a", 1),
            ("a\n", 1),
            ("a\nb", 2),
            ("a\r\nb\r\n", 2),
            ("a\rb\r", 2),
            ("a\u{85}b\u{2028}c\u{2029}d", 4),
            ("a\n\n", 2),
        ] {
            assert_eq!(last_line(text), line, "{text:?}");
        }
    }

    #[test]
    fn unlocated_errors_get_a_line() {
        use super::unlocated_error_line as line;
        assert_eq!(line("a: 1\n---\nb: 2\n", "more than one document"), 2);
        assert_eq!(line("a: &x [1]\nb: [*x, *x]\n", "repetition limit exceeded"), 2);
        assert_eq!(line("a: 1\nb: 2\n", "EOF while parsing a value"), 2);
        assert_eq!(line("# c\n\na: 1\n", "anything"), 3);
        assert_eq!(line("", "anything"), 1);
    }

    /// Keys looked up in the differential test: every key of an entry, and some that are not.
    const KEYS: &[&str] = &[
        "kind",
        "name",
        "arch",
        "opclass",
        "a",
        "b",
        "c",
        "accumulator",
        "epilogue_compute",
        "layout_a",
        "layout_b",
        "layout_c",
        "alignment",
        "alignment_c",
        "tile",
        "cluster",
        "warps",
        "instruction",
        "stages",
        "schedule",
        "epilogue_schedule",
        "tile_scheduler",
        "math",
        "swizzle",
        "split_k",
        "epilogue",
        "activation",
        "bias",
        "scale",
        "aux_output",
        "residual",
        "aux_input",
        "reduction",
        "group_schedule",
        "batch_mode",
        "feature",
        "nothing",
    ];

    /// Every line the reader can ask for in `text` agrees with the old one-parse-per-lookup probe.
    fn agrees_with_the_probe(text: &str) -> usize {
        if serde_yaml::from_str::<serde_yaml::Value>(text).is_err()
            || serde_yaml::from_str::<super::super::schema::RawManifest>(text).is_err()
        {
            return 0;
        }
        let map = SourceMap::new(text);
        let mut compared = 0;
        let mut check = |path: &[Step]| {
            assert_eq!(
                map.line(path),
                super::probe_oracle::line(text, path),
                "{path:?} in:\n{text}"
            );
            compared += 1;
        };
        check(&[]);
        check(&[Step::Key("version")]);
        check(&[Step::Key("operations")]);
        let entries = text.matches("kind").count() + 1;
        for i in 0..entries {
            let entry = [Step::Key("operations"), Step::Index(i)];
            check(&entry);
            for key in KEYS {
                let field = [entry[0], entry[1], Step::Key(key)];
                check(&field);
                // (A key that is not there has no elements either.)
                if map.line(&field).is_some() {
                    for j in 0..3 {
                        check(&[field[0], field[1], field[2], Step::Index(j)]);
                    }
                }
            }
        }
        compared
    }

    #[test]
    fn lines_agree_with_the_probe_on_the_corpus_and_its_mutations() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut texts = vec![std::fs::read_to_string(root.join("../kernel_manifest.yaml")).unwrap()];
        for entry in std::fs::read_dir(root.join("tests/manifest_errors")).unwrap() {
            texts.push(std::fs::read_to_string(entry.unwrap().path()).unwrap());
        }
        let tricky = "version: 1\noperations:\n  - &e\n    kind: gemm\n    tile: [\n      [1, 2, 3],\n      []]\n  - *e\n  -\n    {\n      kind: gemm, tile: [[1,\n 2], *e]}\n  - {}\n  - !!map {kind: gemm}\n  - ? kind\n    : gemm\n";
        assert!(agrees_with_the_probe(tricky) > 100);
        // Line-level mutations (xorshift, fixed seed): lines deleted, duplicated, swapped, folded
        // into flow style, anchored and aliased.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n.max(1) as u64) as usize
        };
        let originals = texts.len();
        for k in 0..400 {
            // (The real manifest, the largest text, only as it is: the probe is slow on it.)
            let mut lines: Vec<String> = texts[1 + k % (originals - 1)]
                .lines()
                .map(str::to_string)
                .collect();
            for _ in 0..1 + next(3) {
                let n = lines.len();
                let (i, j) = (next(n), next(n));
                match next(6) {
                    0 if n > 0 => drop(lines.remove(i)),
                    1 if n > 0 => lines.insert(i, lines[i].clone()),
                    2 if n > 0 => lines.swap(i, j),
                    3 if n > 0 => lines[i] = lines[i].replacen("- kind:", "- &x\n    kind:", 1),
                    4 if n > 0 => lines.insert(i, "  - *x".to_string()),
                    _ if n > 1 && i + 1 < n => {
                        let joined = format!("{} {}", lines[i], lines[i + 1].trim_start());
                        lines[i] = joined;
                        lines.remove(i + 1);
                    }
                    _ => {}
                }
            }
            texts.push(lines.join("\n") + "\n");
        }
        let compared: usize = texts.iter().map(|t| agrees_with_the_probe(t)).sum();
        println!("{compared} lookups compared");
        assert!(compared > 20_000, "only {compared} lookups compared");
    }
}
