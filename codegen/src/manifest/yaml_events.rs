//! The parse events of a YAML text, each with its line, straight from libyaml (`unsafe-libyaml`,
//! the parser serde_yaml is built on): an event's line is the line serde_yaml puts in its errors
//! for the node the event starts. The only unsafe code of the manifest reader is here, and it
//! follows serde_yaml's own wrapper (`serde_yaml::libyaml::parser`).

use std::ffi::CStr;
use std::marker::PhantomData;
use std::mem::MaybeUninit;

/// One event (stream events left out). Anchors and scalar values are the bytes libyaml gives
/// (UTF-8, since the input is a `str`).
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    DocumentStart,
    DocumentEnd,
    Alias { anchor: Vec<u8> },
    Scalar { anchor: Option<Vec<u8>>, value: Vec<u8> },
    SequenceStart { anchor: Option<Vec<u8>> },
    SequenceEnd,
    MappingStart { anchor: Option<Vec<u8>> },
    MappingEnd,
}

/// Reads the events of one text, in order, until the end of the stream or the first syntax
/// error (which serde_yaml reports itself).
pub struct Events<'t> {
    /// Heap-allocated and never moved: libyaml keeps a pointer to the parser inside it.
    parser: *mut unsafe_libyaml::yaml_parser_t,
    done: bool,
    /// libyaml reads the text through a raw pointer: it must outlive the parser.
    text: PhantomData<&'t str>,
}

impl<'t> Events<'t> {
    pub fn new(text: &'t str) -> Self {
        let parser = Box::into_raw(Box::new(MaybeUninit::<unsafe_libyaml::yaml_parser_t>::uninit())).cast();
        // SAFETY: `parser` points to memory for a parser, which `yaml_parser_initialize` fills in
        // (it zeroes the parser first, and its allocations abort rather than fail, so it always
        // succeeds). The text outlives the parser (`'t`); its length fits in libyaml's `u64`.
        let failed = unsafe {
            let failed = unsafe_libyaml::yaml_parser_initialize(parser).fail;
            if !failed {
                unsafe_libyaml::yaml_parser_set_encoding(parser, unsafe_libyaml::YAML_UTF8_ENCODING);
                unsafe_libyaml::yaml_parser_set_input_string(parser, text.as_ptr(), text.len() as u64);
            }
            failed
        };
        Events {
            parser,
            done: failed,
            text: PhantomData,
        }
    }
}

impl Iterator for Events<'_> {
    /// The event and its 1-based line.
    type Item = (Event, usize);

    fn next(&mut self) -> Option<(Event, usize)> {
        while !self.done {
            let mut event = MaybeUninit::<unsafe_libyaml::yaml_event_t>::uninit();
            // SAFETY: the parser was initialised with an input that is still alive, and it has not
            // failed before (`done`). On success `event` holds an event of the type it says, whose
            // strings are NUL-terminated (anchors) or `length` bytes long (scalar values); they are
            // copied before `yaml_event_delete` frees them. On failure there is nothing to free.
            let item = unsafe {
                let event = event.as_mut_ptr();
                if unsafe_libyaml::yaml_parser_parse(self.parser, event).fail {
                    self.done = true;
                    return None;
                }
                let line = usize::try_from((*event).start_mark.line)
                    .unwrap_or(usize::MAX)
                    .saturating_add(1);
                let data = &(*event).data;
                let converted = match (*event).type_ {
                    unsafe_libyaml::YAML_STREAM_END_EVENT => {
                        self.done = true;
                        None
                    }
                    unsafe_libyaml::YAML_DOCUMENT_START_EVENT => Some(Event::DocumentStart),
                    unsafe_libyaml::YAML_DOCUMENT_END_EVENT => Some(Event::DocumentEnd),
                    unsafe_libyaml::YAML_ALIAS_EVENT => Some(Event::Alias {
                        anchor: anchor(data.alias.anchor).unwrap_or_default(),
                    }),
                    unsafe_libyaml::YAML_SCALAR_EVENT => {
                        let value = data.scalar.value;
                        let value = if value.is_null() {
                            Vec::new()
                        } else {
                            std::slice::from_raw_parts(value, data.scalar.length as usize).to_vec()
                        };
                        Some(Event::Scalar {
                            anchor: anchor(data.scalar.anchor),
                            value,
                        })
                    }
                    unsafe_libyaml::YAML_SEQUENCE_START_EVENT => Some(Event::SequenceStart {
                        anchor: anchor(data.sequence_start.anchor),
                    }),
                    unsafe_libyaml::YAML_SEQUENCE_END_EVENT => Some(Event::SequenceEnd),
                    unsafe_libyaml::YAML_MAPPING_START_EVENT => Some(Event::MappingStart {
                        anchor: anchor(data.mapping_start.anchor),
                    }),
                    unsafe_libyaml::YAML_MAPPING_END_EVENT => Some(Event::MappingEnd),
                    // Stream start (and nothing else: libyaml has no other events).
                    _ => None,
                };
                unsafe_libyaml::yaml_event_delete(event);
                converted.map(|e| (e, line))
            };
            if item.is_some() {
                return item;
            }
        }
        None
    }
}

/// A copy of a NUL-terminated anchor name; `None` for a null pointer.
///
/// # Safety
/// `ptr` is null or points to a NUL-terminated string.
unsafe fn anchor(ptr: *const u8) -> Option<Vec<u8>> {
    if ptr.is_null() {
        None
    } else {
        // SAFETY: as the caller promises.
        Some(unsafe { CStr::from_ptr(ptr.cast()) }.to_bytes().to_vec())
    }
}

impl Drop for Events<'_> {
    fn drop(&mut self) {
        // SAFETY: `parser` came from `Box::into_raw` of a `MaybeUninit<yaml_parser_t>` and was
        // initialised by `yaml_parser_initialize`; it is deleted once, then freed.
        unsafe {
            unsafe_libyaml::yaml_parser_delete(self.parser);
            drop(Box::from_raw(
                self.parser.cast::<MaybeUninit<unsafe_libyaml::yaml_parser_t>>(),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Event, Events};

    #[test]
    fn events_carry_lines() {
        let text = "a: &x 1\nb:\n  - *x\n  - {c: d}\n";
        let got: Vec<(Event, usize)> = Events::new(text).collect();
        let scalar = |v: &str, anchor: Option<&str>| Event::Scalar {
            anchor: anchor.map(|a| a.as_bytes().to_vec()),
            value: v.as_bytes().to_vec(),
        };
        assert_eq!(
            got,
            vec![
                (Event::DocumentStart, 1),
                (Event::MappingStart { anchor: None }, 1),
                (scalar("a", None), 1),
                (scalar("1", Some("x")), 1),
                (scalar("b", None), 2),
                (Event::SequenceStart { anchor: None }, 3),
                (
                    Event::Alias {
                        anchor: b"x".to_vec()
                    },
                    3
                ),
                (Event::MappingStart { anchor: None }, 4),
                (scalar("c", None), 4),
                (scalar("d", None), 4),
                (Event::MappingEnd, 4),
                (Event::SequenceEnd, 5),
                (Event::MappingEnd, 5),
                (Event::DocumentEnd, 5),
            ]
        );
    }

    #[test]
    fn stops_at_a_syntax_error() {
        let events: Vec<_> = Events::new("a: [1, 2\nb: 3\n").collect();
        assert!(events.len() < 8, "{events:?}");
        assert_eq!(Events::new("").count(), 0);
    }
}
