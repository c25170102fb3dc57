//! Server-side printing (`meta.k8s.io/v1` Table), as far as the informer
//! needs it: the `Accept` header that asks for a Table, the column
//! definitions a list carries, and the compact text of one row's cells.
//!
//! In table mode every row also carries its full object
//! (`includeObject=Object`), so the store keeps holding real objects and the
//! cells ride along with them. Cells are kept small on purpose: at 30k pods
//! the page already holds about three times the JSON size, so a row's cells
//! are one allocation of length-prefixed UTF-8 text ([`RowCells`]) rather than
//! a vector of JSON values.

use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

/// What a table-mode request sends as `Accept`: a Table if the server can
/// print one, else the plain JSON list or event (kubectl's own choice).
pub const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io, application/json";

/// One `columnDefinitions` entry of a Table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ColumnDefinition {
    pub name: String,
    /// OpenAPI type: `string`, `integer`, `number`, `boolean` or `date`.
    #[serde(rename = "type")]
    pub type_: String,
    /// OpenAPI format: `name` for the object's name, `date`, or empty.
    pub format: String,
    pub description: String,
    /// 0: shown by default; higher: only in the wide view (`kubectl -o wide`).
    pub priority: i32,
}

impl ColumnDefinition {
    /// A number column (sorts as a number).
    pub fn is_numeric(&self) -> bool {
        matches!(self.type_.as_str(), "integer" | "number")
    }

    /// A timestamp column, which the server prints as an age.
    pub fn is_date(&self) -> bool {
        self.type_ == "date" || self.format == "date"
    }

    /// The usual AGE column: the object's `metadata.creationTimestamp`. The
    /// built-in printers call it `Age` and describe it as CreationTimestamp.
    pub fn is_creation_age(&self) -> bool {
        self.name.eq_ignore_ascii_case("age")
            || self
                .description
                .starts_with("CreationTimestamp is a timestamp")
    }

    /// The object's name (format `name`).
    pub fn is_name(&self) -> bool {
        self.format == "name"
    }
}

/// The cells of one Table row as text, in column order, in one allocation:
/// each cell is a LEB128 length followed by its UTF-8 bytes. Strings are kept
/// as they are, `null` becomes the empty string, numbers and booleans their
/// JSON text, and (rare) arrays or objects their compact JSON.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RowCells(Box<[u8]>);

impl RowCells {
    /// Packs `cells` (what the decoder does, and tests).
    pub fn from_texts<'a>(cells: impl IntoIterator<Item = &'a str>) -> RowCells {
        let mut buf = Vec::new();
        for cell in cells {
            push_cell(&mut buf, cell);
        }
        RowCells(buf.into_boxed_slice())
    }

    /// The number of cells.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The text of cell `index`, `None` past the end.
    pub fn get(&self, index: usize) -> Option<&str> {
        self.iter().nth(index)
    }

    pub fn iter(&self) -> Cells<'_> {
        Cells { rest: &self.0 }
    }

    /// Bytes held on the heap (for memory estimates).
    pub fn heap_bytes(&self) -> usize {
        self.0.len()
    }
}

impl fmt::Debug for RowCells {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

fn push_cell(buf: &mut Vec<u8>, text: &str) {
    let mut n = text.len();
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            buf.push(byte);
            break;
        }
        buf.push(byte | 0x80);
    }
    buf.extend_from_slice(text.as_bytes());
}

/// Iterator over the cells of a [`RowCells`].
pub struct Cells<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Cells<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.rest.is_empty() {
            return None;
        }
        let mut len = 0usize;
        let mut shift = 0u32;
        let mut at = 0;
        loop {
            let byte = *self.rest.get(at)?;
            at += 1;
            len |= usize::from(byte & 0x7f).checked_shl(shift)?;
            if byte & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        let end = at.checked_add(len)?;
        let text = self.rest.get(at..end)?;
        self.rest = &self.rest[end..];
        // Only `push_cell` writes the buffer, always from a `&str`.
        Some(std::str::from_utf8(text).unwrap_or_default())
    }
}

impl<'de> Deserialize<'de> for RowCells {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RowCells, D::Error> {
        deserializer.deserialize_any(RowCellsVisitor)
    }
}

struct RowCellsVisitor;

impl<'de> Visitor<'de> for RowCellsVisitor {
    type Value = RowCells;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of table cells")
    }

    fn visit_unit<E: de::Error>(self) -> Result<RowCells, E> {
        Ok(RowCells::default())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RowCells, A::Error> {
        let mut buf = Vec::new();
        while let Some(cell) = seq.next_element::<CellText>()? {
            push_cell(&mut buf, &cell.0);
        }
        Ok(RowCells(buf.into_boxed_slice()))
    }
}

/// One cell as text, read without building a JSON tree for scalars.
struct CellText(String);

impl<'de> Deserialize<'de> for CellText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<CellText, D::Error> {
        deserializer.deserialize_any(CellVisitor)
    }
}

struct CellVisitor;

impl<'de> Visitor<'de> for CellVisitor {
    type Value = CellText;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a table cell")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<CellText, E> {
        Ok(CellText(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<CellText, E> {
        Ok(CellText(v))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<CellText, E> {
        Ok(CellText(v.to_string()))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<CellText, E> {
        Ok(CellText(v.to_string()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<CellText, E> {
        Ok(CellText(v.to_string()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<CellText, E> {
        Ok(CellText(
            serde_json::Number::from_f64(v).map_or_else(String::new, |n| n.to_string()),
        ))
    }

    fn visit_unit<E: de::Error>(self) -> Result<CellText, E> {
        Ok(CellText(String::new()))
    }

    fn visit_none<E: de::Error>(self) -> Result<CellText, E> {
        Ok(CellText(String::new()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<CellText, A::Error> {
        let value: serde_json::Value =
            Deserialize::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        Ok(CellText(value.to_string()))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<CellText, A::Error> {
        let value: serde_json::Value =
            Deserialize::deserialize(de::value::MapAccessDeserializer::new(map))?;
        Ok(CellText(value.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn cells_read_scalars_as_text() {
        let cells: RowCells =
            serde_json::from_str(r#"["web-1", 3, 2.5, true, null, "", {"a":1}, [1,"x"]]"#).unwrap();
        let texts: Vec<&str> = cells.iter().collect();
        assert_eq!(
            texts,
            [
                "web-1",
                "3",
                "2.5",
                "true",
                "",
                "",
                r#"{"a":1}"#,
                r#"[1,"x"]"#
            ]
        );
        assert_eq!(cells.len(), 8);
        assert_eq!(cells.get(1), Some("3"));
        assert_eq!(cells.get(8), None);
        assert!(serde_json::from_str::<RowCells>("null").unwrap().is_empty());
        assert!(serde_json::from_str::<RowCells>(r#""not cells""#).is_err());
    }

    #[test]
    fn long_cells_keep_their_length() {
        let long = "x".repeat(70_000);
        let cells = RowCells::from_texts(["a", long.as_str(), "ü"]);
        assert_eq!(cells.get(1).map(str::len), Some(70_000));
        assert_eq!(cells.get(2), Some("ü"));
    }

    #[test]
    fn column_kinds() {
        let defs: Vec<ColumnDefinition> = serde_json::from_str(
            r#"[{"name":"Name","type":"string","format":"name","priority":0},
                {"name":"Restarts","type":"integer","priority":0},
                {"name":"Age","type":"string","description":"CreationTimestamp is a timestamp representing the server time when this object was created."},
                {"name":"Created At","type":"date"},
                {"name":"IP","type":"string","priority":1,"extra":"ignored"}]"#,
        )
        .unwrap();
        assert!(defs[0].is_name());
        assert!(defs[1].is_numeric() && !defs[1].is_date());
        assert!(defs[2].is_creation_age());
        assert!(defs[3].is_date() && !defs[3].is_creation_age());
        assert_eq!(defs[4].priority, 1);
    }

    proptest! {
        #[test]
        fn packed_cells_round_trip(texts in proptest::collection::vec(".{0,200}", 0..20)) {
            let cells = RowCells::from_texts(texts.iter().map(String::as_str));
            let back: Vec<&str> = cells.iter().collect();
            prop_assert_eq!(back, texts.iter().map(String::as_str).collect::<Vec<_>>());
            // and through JSON, as the server sends them
            let json = serde_json::to_string(&texts).unwrap();
            let decoded: RowCells = serde_json::from_str(&json).unwrap();
            prop_assert_eq!(decoded, cells);
        }
    }
}
