//! Line numbers for manifest nodes.
//!
//! serde_yaml keeps no positions in the values it returns, but it stamps every error with the
//! position of the node being read when the error arose. So to find where a node is, we re-read the
//! text with a deserializer that walks down a path and fails on purpose when it reaches the node,
//! then take the line from that error. This is exact for every YAML style (block, flow, anchors),
//! unlike scanning lines by hand. It costs one parse per lookup, and lookups are only made for
//! entry origins and for problems, so manifests stay cheap to read.

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// One step of a path into the document.
#[derive(Clone, Copy, Debug)]
pub enum Step<'a> {
    /// A mapping key; as the last step, the line of the key itself.
    Key(&'a str),
    /// A sequence element.
    Index(usize),
}

/// The error message that marks "found it"; never shown to users.
const FOUND: &str = "\u{0}source-map-probe";

/// Looks up lines in one manifest text.
pub struct SourceMap<'t> {
    text: &'t str,
}

impl<'t> SourceMap<'t> {
    pub fn new(text: &'t str) -> Self {
        SourceMap { text }
    }

    /// The 1-based line of the node at `path`, or `None` when there is no such node.
    pub fn line(&self, path: &[Step]) -> Option<usize> {
        let err = Probe(path)
            .deserialize(serde_yaml::Deserializer::from_str(self.text))
            .err()?;
        if err.to_string().contains(FOUND) {
            err.location().map(|loc| loc.line())
        } else {
            None
        }
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
}
