//! A span-carrying tree of the TOML document, so that every error (syntax,
//! schema or value) points at the line and column of its key.

use super::error::{root, KeyPath};
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::cell::Cell;
use std::fmt;
use std::ops::Range;
use std::sync::OnceLock;

// ---------------------------------------------------------------------------
// Span tree: where every key and value of the document is.

/// A value of the document with its byte span (when toml reports one).
#[derive(Debug)]
pub(super) struct Node {
    span: Option<Range<usize>>,
    kind: NodeKind,
}

#[derive(Debug)]
pub(super) enum NodeKind {
    Table(Vec<Entry>),
    Array(Vec<Node>),
    Leaf,
}

#[derive(Debug)]
pub(super) struct Entry {
    key: String,
    key_span: Option<Range<usize>>,
    value: Node,
}

/// The private struct name and field names that `toml::Spanned` uses to ask
/// the deserializer for spans, captured from `Spanned`'s own `Deserialize`
/// impl so they are never hard-coded. With them the tree can request spans
/// where toml has them and still accept values (implicit tables, dotted keys)
/// where it has none, which `Spanned` itself rejects.
pub(super) struct SpanProtocol {
    pub(super) name: &'static str,
    pub(super) fields: &'static [&'static str],
}

pub(super) fn span_protocol() -> Option<&'static SpanProtocol> {
    static PROTOCOL: OnceLock<Option<SpanProtocol>> = OnceLock::new();
    PROTOCOL
        .get_or_init(|| {
            struct Capture<'a>(&'a Cell<Option<SpanProtocol>>);
            impl<'de> Deserializer<'de> for Capture<'_> {
                type Error = de::value::Error;
                fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
                    Err(de::Error::custom("capture"))
                }
                fn deserialize_struct<V: Visitor<'de>>(
                    self,
                    name: &'static str,
                    fields: &'static [&'static str],
                    _: V,
                ) -> Result<V::Value, Self::Error> {
                    self.0.set(Some(SpanProtocol { name, fields }));
                    Err(de::Error::custom("capture"))
                }
                serde::forward_to_deserialize_any! {
                    bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
                    bytes byte_buf option unit unit_struct newtype_struct seq tuple
                    tuple_struct map enum identifier ignored_any
                }
            }
            let cell = Cell::new(None);
            let _ = toml::Spanned::<de::IgnoredAny>::deserialize(Capture(&cell));
            cell.take().filter(|p| p.fields.len() == 3)
        })
        .as_ref()
}

/// A key or one of the span protocol's marker keys, possibly with its span.
pub(super) struct MaybeSpannedKey {
    span: Option<Range<usize>>,
    key: String,
}

impl<'de> Deserialize<'de> for MaybeSpannedKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MaybeSpannedKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<MaybeSpannedKey, E> {
                Ok(MaybeSpannedKey {
                    span: None,
                    key: v.to_string(),
                })
            }
            fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<MaybeSpannedKey, M::Error> {
                let (span, key) = read_spanned::<M, String>(&mut m, None)?;
                Ok(MaybeSpannedKey { span, key })
            }
        }
        match span_protocol() {
            Some(p) => d.deserialize_struct(p.name, p.fields, V),
            None => d.deserialize_any(V),
        }
    }
}

/// Reads the rest of a span protocol map (start, end, value); `first` is the
/// already-read first key, if any.
pub(super) fn read_spanned<'de, M: MapAccess<'de>, T: Deserialize<'de>>(
    m: &mut M,
    first: Option<String>,
) -> Result<(Option<Range<usize>>, T), M::Error> {
    let Some(p) = span_protocol() else {
        return Err(de::Error::custom("span protocol unavailable"));
    };
    let (mut start, mut end, mut value) = (None, None, None);
    let mut key = match first {
        Some(k) => Some(k),
        None => m.next_key::<String>()?,
    };
    while let Some(k) = key {
        if k == p.fields[0] {
            start = Some(m.next_value::<usize>()?);
        } else if k == p.fields[1] {
            end = Some(m.next_value::<usize>()?);
        } else if k == p.fields[2] {
            value = Some(m.next_value::<T>()?);
        } else {
            return Err(de::Error::custom("unexpected key in span protocol"));
        }
        key = m.next_key::<String>()?;
    }
    let value = value.ok_or_else(|| de::Error::custom("span protocol without value"))?;
    let span = match (start, end) {
        (Some(s), Some(e)) if s <= e => Some(s..e),
        _ => None,
    };
    Ok((span, value))
}

/// The value half of the span protocol: deserialized with `deserialize_any`.
pub(super) struct Bare(NodeKind);

impl<'de> Deserialize<'de> for Bare {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor { spanned: false })
            .map(|n| Bare(n.kind))
    }
}

pub(super) struct NodeVisitor {
    /// Whether the deserializer was asked for spans (so a map may be the
    /// span protocol rather than a table).
    spanned: bool,
}

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any TOML value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Node, E> {
        Ok(leaf())
    }
    fn visit_i64<E>(self, _: i64) -> Result<Node, E> {
        Ok(leaf())
    }
    fn visit_u64<E>(self, _: u64) -> Result<Node, E> {
        Ok(leaf())
    }
    fn visit_f64<E>(self, _: f64) -> Result<Node, E> {
        Ok(leaf())
    }
    fn visit_str<E>(self, _: &str) -> Result<Node, E> {
        Ok(leaf())
    }
    fn visit_seq<S: SeqAccess<'de>>(self, mut s: S) -> Result<Node, S::Error> {
        let mut items = Vec::new();
        while let Some(n) = s.next_element::<Node>()? {
            items.push(n);
        }
        Ok(Node {
            span: None,
            kind: NodeKind::Array(items),
        })
    }
    fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Node, M::Error> {
        let first = m.next_key::<MaybeSpannedKey>()?;
        if let (true, Some(first), Some(p)) = (self.spanned, &first, span_protocol()) {
            if first.span.is_none() && first.key == p.fields[0] {
                let (span, Bare(kind)) = read_spanned::<M, Bare>(&mut m, Some(first.key.clone()))?;
                return Ok(Node { span, kind });
            }
        }
        let mut entries = Vec::new();
        let mut next = first;
        while let Some(k) = next {
            let value = m.next_value::<Node>()?;
            entries.push(Entry {
                key: k.key,
                key_span: k.span,
                value,
            });
            next = m.next_key::<MaybeSpannedKey>()?;
        }
        Ok(Node {
            span: None,
            kind: NodeKind::Table(entries),
        })
    }
}

pub(super) fn leaf() -> Node {
    Node {
        span: None,
        kind: NodeKind::Leaf,
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match span_protocol() {
            Some(p) => d.deserialize_struct(p.name, p.fields, NodeVisitor { spanned: true }),
            None => d.deserialize_any(NodeVisitor { spanned: false }),
        }
    }
}

pub(super) fn union(a: Option<Range<usize>>, b: Option<Range<usize>>) -> Option<Range<usize>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.start.min(b.start)..a.end.max(b.end)),
        (a, b) => a.or(b),
    }
}

impl Node {
    /// Gives span-less nodes (implicit tables, dotted keys) the union of
    /// their children's spans.
    pub(super) fn filled(mut self) -> Node {
        let mut acc = None;
        self.kind = match self.kind {
            NodeKind::Table(entries) => NodeKind::Table(
                entries
                    .into_iter()
                    .map(|e| {
                        let value = e.value.filled();
                        acc = union(acc.clone(), union(e.key_span.clone(), value.span.clone()));
                        Entry { value, ..e }
                    })
                    .collect(),
            ),
            NodeKind::Array(items) => NodeKind::Array(
                items
                    .into_iter()
                    .map(|n| {
                        let n = n.filled();
                        acc = union(acc.clone(), n.span.clone());
                        n
                    })
                    .collect(),
            ),
            NodeKind::Leaf => NodeKind::Leaf,
        };
        if self.span.is_none() {
            self.span = acc;
        }
        self
    }

    /// Every node as (path, key span, value span), parents before children.
    pub(super) fn flatten(&self) -> Vec<Loc> {
        let mut out = Vec::new();
        self.flatten_into(root(), None, &mut out);
        out
    }

    fn flatten_into(&self, path: KeyPath, key_span: Option<Range<usize>>, out: &mut Vec<Loc>) {
        out.push(Loc {
            path: path.clone(),
            key_span,
            span: self.span.clone(),
        });
        match &self.kind {
            NodeKind::Table(entries) => {
                for e in entries {
                    e.value
                        .flatten_into(path.key(&e.key), e.key_span.clone(), out);
                }
            }
            NodeKind::Array(items) => {
                for (i, n) in items.iter().enumerate() {
                    n.flatten_into(path.index(i), None, out);
                }
            }
            NodeKind::Leaf => {}
        }
    }
}

pub(super) struct Loc {
    pub(super) path: KeyPath,
    pub(super) key_span: Option<Range<usize>>,
    pub(super) span: Option<Range<usize>>,
}

pub(super) fn contains(outer: &Option<Range<usize>>, inner: &Range<usize>) -> bool {
    outer
        .as_ref()
        .is_some_and(|o| o.start <= inner.start && inner.end <= o.end)
}

/// The key path of the innermost key or value covering `span` (ties go to
/// the deeper path, e.g. an array-of-tables element over the array).
pub(super) fn locate(locs: &[Loc], span: &Range<usize>) -> KeyPath {
    locs.iter()
        .filter_map(|l| {
            let len = |r: &Option<Range<usize>>| r.as_ref().map_or(usize::MAX, |r| r.len());
            let best = [&l.key_span, &l.span]
                .into_iter()
                .filter(|r| contains(r, span))
                .map(len)
                .min()?;
            Some((best, std::cmp::Reverse(l.path.0.len()), &l.path))
        })
        .min_by_key(|(len, depth, _)| (*len, *depth))
        .map_or_else(root, |(_, _, p)| p.clone())
}

/// Where to point for an error about `path`: its key if it has one, else its
/// value; for an absent key, its nearest present ancestor; else the start.
pub(super) fn position_of(locs: &[Loc], path: &KeyPath) -> usize {
    let mut p = path.clone();
    loop {
        if let Some(l) = locs.iter().find(|l| l.path == p) {
            if let Some(s) = l.key_span.as_ref().or(l.span.as_ref()) {
                return s.start;
            }
        }
        if p.0.pop().is_none() {
            return 0;
        }
    }
}

/// Best-effort key path of byte `pos` for syntax errors, where no tree
/// exists: the last `[table]`/`[[array]]` header before the line plus the
/// key at the start of the line.
pub(super) fn textual_path(text: &str, pos: usize) -> String {
    let mut pos = pos.min(text.len());
    while !text.is_char_boundary(pos) {
        pos -= 1;
    }
    let line_start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let mut table = String::new();
    let mut aot_counts: Vec<(String, usize)> = Vec::new();
    // Resolves `a.b` against arrays of tables seen so far: `job.match` →
    // `job[2].match` when `[[job]]` was seen three times.
    let resolve = |name: &str, counts: &[(String, usize)]| -> String {
        for (aot, n) in counts.iter().rev() {
            if let Some(rest) = name.strip_prefix(aot.as_str()) {
                if rest.is_empty() || rest.starts_with('.') {
                    return format!("{aot}[{}]{rest}", n.saturating_sub(1));
                }
            }
        }
        name.to_string()
    };
    let header = |line: &str| -> Option<(bool, String)> {
        let t = line.trim_start();
        // A malformed header (no closing bracket) still names its table.
        let name = |r: &str, close: &str| {
            let end = r.find(close).or_else(|| r.find('#')).unwrap_or(r.len());
            r[..end].replace([' ', '\t'], "")
        };
        if let Some(r) = t.strip_prefix("[[") {
            return Some((true, name(r, "]]")));
        }
        t.strip_prefix('[').map(|r| (false, name(r, "]")))
    };
    for line in text[..line_start].lines() {
        match header(line) {
            Some((true, name)) => {
                match aot_counts.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, c)) => *c += 1,
                    None => aot_counts.push((name.clone(), 1)),
                }
                table = resolve(&name, &aot_counts);
            }
            Some((false, name)) => table = resolve(&name, &aot_counts),
            None => {}
        }
    }
    let line = text[line_start..].lines().next().unwrap_or("");
    let key = match header(line) {
        Some((_, name)) if name.is_empty() => return root().to_string(),
        Some((is_aot, name)) => {
            return if is_aot {
                let n = aot_counts
                    .iter()
                    .find(|(a, _)| *a == name)
                    .map_or(0, |(_, c)| *c);
                format!("{name}[{n}]")
            } else {
                resolve(&name, &aot_counts)
            }
        }
        None => line
            .split_once('=')
            .map(|(k, _)| k.trim().replace(' ', ""))
            .unwrap_or_default(),
    };
    match (table.is_empty(), key.is_empty()) {
        (true, true) => root().to_string(),
        (true, false) => key,
        (false, true) => table,
        (false, false) => format!("{table}.{key}"),
    }
}
