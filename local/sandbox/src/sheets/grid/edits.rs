//! What people do to a sheet's rows and columns, which is also what
//! `spreadsheets.batchUpdate`'s `deleteDimension`, `insertDimension` and
//! `sortRange` do: delete rows (those below move up), insert blank rows
//! (those below move down), sort a block of rows by a column.
//!
//! Indices are 0-based and end-exclusive, as in Google's `DimensionRange`
//! and `GridRange`. The grid follows the edit: deleting shrinks it,
//! inserting grows it, as in Google, so the next append lands after the
//! data as it now is. The sandbox keeps no formatting, so
//! `inheritFromBefore` only decides where an insertion may go, as it does
//! at Google (before the last row only without it, never before row 0
//! with it).
//!
//! A sort moves only the cells of its range: cells of the same rows
//! outside its columns stay put, as in Google (a person sorting `A2:C9`
//! leaves `D` alone). The order is Google Sheets' (ascending): numbers,
//! then text (ignoring case), then booleans, then formulas (the sandbox
//! does not evaluate them; Google would sort by their results); empty
//! cells go last whichever the direction. Ties keep their order (a stable
//! sort), so a later key only breaks the earlier keys' ties.
//!
//! Refusals are the message after Google's `Invalid requests[i].kind: `
//! prefix, in Google's words where known.

use super::{Sheet, Spreadsheet, trim_end};
use crate::sheets::a1::Rect;
use crate::sheets::cells::formula_of;
use serde_json::Value;
use std::cmp::Ordering;

/// Google caps a spreadsheet at ten million cells, and a sheet at column
/// `ZZZ`.
const MAX_CELLS: u64 = 10_000_000;
const MAX_COLUMNS: u32 = 18_278;

/// `ROWS` or `COLUMNS` of a `DimensionRange`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dimension {
    Rows,
    Columns,
}

impl Dimension {
    fn noun(self) -> &'static str {
        match self {
            Self::Rows => "row",
            Self::Columns => "column",
        }
    }
}

/// One axis of a `GridRange`: a missing index is unbounded on that side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: Option<u32>,
    pub(crate) end: Option<u32>,
}

/// One of a sort's `sortSpecs`: a sheet column (0 is `A`) and a direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SortKey {
    pub(crate) column: u32,
    pub(crate) descending: bool,
}

impl Spreadsheet {
    pub(crate) fn sheet_mut(&mut self, gid: u64) -> Option<&mut Sheet> {
        self.sheets.iter_mut().find(|s| s.gid == gid)
    }

    /// Cells of every sheet's grid, which Google caps.
    pub(crate) fn grid_cells(&self) -> u64 {
        self.sheets.iter().map(|s| u64::from(s.row_count) * u64::from(s.column_count)).sum()
    }
}

impl Sheet {
    fn size(&self, dimension: Dimension) -> u32 {
        match dimension {
            Dimension::Rows => self.row_count,
            Dimension::Columns => self.column_count,
        }
    }

    /// Deletes rows or columns `start..end`: what follows moves back and
    /// the grid shrinks by as many.
    pub(crate) fn delete_dimension(&mut self, dimension: Dimension, start: u32, end: u32) -> Result<(), String> {
        let (size, noun) = (self.size(dimension), dimension.noun());
        ordered(start, end)?;
        if end > size {
            return Err(format!(
                "Cannot delete a {noun} that doesn't exist. Tried to delete {noun} index {size} but there are only \
                 {size} {noun}s."
            ));
        }
        if start == 0 && end == size {
            return Err(format!("You can't delete all the {noun}s on the sheet."));
        }
        // Held rows and cells stop at the data; the grid may go further.
        let held = |len: usize| (start as usize).min(len)..(end as usize).min(len);
        match dimension {
            Dimension::Rows => {
                let range = held(self.rows.len());
                self.rows.drain(range);
                self.row_count -= end - start;
            }
            Dimension::Columns => {
                for row in &mut self.rows {
                    let range = held(row.len());
                    row.drain(range);
                    trim_end(row, Value::is_null);
                }
                self.column_count -= end - start;
            }
        }
        // Deleting the last rows of data may leave empty rows at the end.
        trim_end(&mut self.rows, Vec::is_empty);
        Ok(())
    }

    /// Inserts blank rows or columns at `start..end`: what was there and
    /// after moves on by as many, and the grid grows. `grid_cells` is the
    /// spreadsheet's before the insertion (its cap counts every sheet).
    pub(crate) fn insert_dimension(
        &mut self,
        dimension: Dimension,
        start: u32,
        end: u32,
        inherit_from_before: bool,
        grid_cells: u64,
    ) -> Result<(), String> {
        let size = self.size(dimension);
        ordered(start, end)?;
        if inherit_from_before && start == 0 {
            return Err("range.startIndex must be greater than 0 if inheritFromBefore is true.".into());
        }
        if inherit_from_before && start > size {
            return Err(format!(
                "range.startIndex must be less than or equal to the grid size ({size}) if inheritFromBefore is true."
            ));
        }
        if !inherit_from_before && start >= size {
            return Err(format!(
                "range.startIndex must be less than the grid size ({size}) if inheritFromBefore is false."
            ));
        }
        let count = end - start;
        let across = u64::from(self.size(match dimension {
            Dimension::Rows => Dimension::Columns,
            Dimension::Columns => Dimension::Rows,
        }));
        if grid_cells + u64::from(count) * across > MAX_CELLS {
            return Err(format!(
                "This action would increase the number of cells in the workbook above the limit of {MAX_CELLS} cells."
            ));
        }
        let at = start as usize;
        match dimension {
            Dimension::Rows => {
                // Rows past the data are blank already: only the grid grows.
                if at < self.rows.len() {
                    self.rows.splice(at..at, (0..count).map(|_| Vec::new()));
                }
                self.row_count += count;
            }
            Dimension::Columns => {
                if self.column_count + count > MAX_COLUMNS {
                    return Err(format!("The sheet would have more than the maximum of {MAX_COLUMNS} columns."));
                }
                for row in self.rows.iter_mut().filter(|row| at < row.len()) {
                    row.splice(at..at, (0..count).map(|_| Value::Null));
                }
                self.column_count += count;
            }
        }
        Ok(())
    }

    /// Sorts the rows of `rows` × `columns` by `keys`, first key first;
    /// returns how many rows of the range hold data.
    pub(crate) fn sort_range(&mut self, rows: Span, columns: Span, keys: &[SortKey]) -> Result<usize, String> {
        let (first_row, end_row) = (rows.start.unwrap_or(0), rows.end.unwrap_or(self.row_count));
        let (first_column, end_column) = (columns.start.unwrap_or(0), columns.end.unwrap_or(self.column_count));
        if first_row > end_row || first_column > end_column {
            return Err(format!(
                "The range's start indexes ({first_row}, {first_column}) must not be past its end indexes \
                 ({end_row}, {end_column})."
            ));
        }
        if end_row > self.row_count || end_column > self.column_count {
            // 1-based and inclusive, to name the range as Google does.
            let rect = Rect {
                first_row: first_row + 1,
                last_row: end_row.max(first_row + 1),
                first_column: first_column + 1,
                last_column: end_column.max(first_column + 1),
            };
            return Err(self.check_within_grid(rect).err().map(|e| e.0).unwrap_or_default());
        }
        if keys.is_empty() {
            return Err("At least one sortSpec is required.".into());
        }
        if let Some((i, key)) = keys.iter().enumerate().find(|(_, k)| !(first_column..end_column).contains(&k.column)) {
            return Err(format!(
                "sortSpecs[{i}].dimensionIndex ({}) is not one of the range's columns ({first_column} to {}).",
                key.column,
                end_column.saturating_sub(1)
            ));
        }
        // Rows and columns past the data are empty: they would sort last
        // and stay where they are, so only the held block moves.
        let widest = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let (top, bottom) = (first_row as usize, (end_row as usize).min(self.rows.len()));
        let (left, right) = (first_column as usize, (end_column as usize).min(widest));
        if top >= bottom || left >= right {
            return Ok(bottom.saturating_sub(top));
        }
        let cell = |row: &Vec<Value>, c: usize| row.get(c).cloned().unwrap_or(Value::Null);
        let mut block: Vec<Vec<Value>> =
            self.rows[top..bottom].iter().map(|row| (left..right).map(|c| cell(row, c)).collect()).collect();
        block.sort_by(|a, b| {
            let by = |key: &SortKey| {
                let at = key.column as usize - left;
                let (x, y) = (a.get(at).unwrap_or(&Value::Null), b.get(at).unwrap_or(&Value::Null));
                compare(x, y, key.descending)
            };
            keys.iter().map(by).find(|o| o.is_ne()).unwrap_or(Ordering::Equal)
        });
        for (row, line) in self.rows[top..bottom].iter_mut().zip(block) {
            if row.len() < right {
                row.resize(right, Value::Null);
            }
            row.splice(left..right, line);
            trim_end(row, Value::is_null);
        }
        trim_end(&mut self.rows, Vec::is_empty);
        Ok(bottom - top)
    }
}

fn ordered(start: u32, end: u32) -> Result<(), String> {
    (start < end)
        .then_some(())
        .ok_or_else(|| format!("range.startIndex ({start}) must be less than range.endIndex ({end})."))
}

/// Two cells in a sort's order: empty last in both directions.
fn compare(a: &Value, b: &Value, descending: bool) -> Ordering {
    let order = if descending { ascending(a, b).reverse() } else { ascending(a, b) };
    // `true` (empty) sorts after `false`; two empty cells are equal either way.
    a.is_null().cmp(&b.is_null()).then(order)
}

/// Numbers, text, booleans, formulas; within each, their own order.
fn ascending(a: &Value, b: &Value) -> Ordering {
    let class = |v: &Value| match v {
        Value::Number(_) => 0,
        Value::String(_) => 1,
        Value::Bool(_) => 2,
        _ => 3,
    };
    class(a).cmp(&class(b)).then_with(|| match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x.as_f64().unwrap_or(0.0).partial_cmp(&y.as_f64().unwrap_or(0.0)).unwrap_or(Ordering::Equal)
        }
        (Value::String(x), Value::String(y)) => x.to_lowercase().cmp(&y.to_lowercase()),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        _ => formula_of(a).cmp(&formula_of(b)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A sheet holding `rows` (a JSON array of arrays) on the default grid.
    fn sheet(rows: Value) -> Spreadsheet {
        let mut spreadsheet = Spreadsheet::new(&[(0, "S")]).unwrap();
        let rows: Vec<Vec<Value>> = serde_json::from_value(rows).unwrap();
        spreadsheet.sheets[0].rows = rows;
        spreadsheet
    }

    #[test]
    fn deleting_moves_what_follows_back_and_shrinks_the_grid() {
        let mut s = sheet(json!([["a", 1], ["b", 2], ["c", 3], ["d", 4]]));
        let sh = s.sheet_mut(0).unwrap();
        sh.delete_dimension(Dimension::Rows, 1, 3).unwrap();
        assert_eq!((sh.values(), sh.row_count), (vec![vec![json!("a"), json!(1)], vec![json!("d"), json!(4)]], 998));
        sh.delete_dimension(Dimension::Columns, 0, 1).unwrap();
        assert_eq!((sh.values(), sh.column_count), (vec![vec![json!(1)], vec![json!(4)]], 25));
        // Deleting the last data row leaves no empty row behind.
        sh.delete_dimension(Dimension::Rows, 1, 2).unwrap();
        assert_eq!(sh.values(), vec![vec![json!(1)]]);
        let past = sh.delete_dimension(Dimension::Rows, 990, 998).unwrap_err();
        assert_eq!(
            past,
            "Cannot delete a row that doesn't exist. Tried to delete row index 997 but there are only 997 rows."
        );
        assert!(sh.delete_dimension(Dimension::Rows, 0, 997).unwrap_err().contains("all the rows"));
        assert!(sh.delete_dimension(Dimension::Rows, 2, 2).unwrap_err().contains("less than range.endIndex"));
    }

    #[test]
    fn inserting_adds_blanks_and_grows_the_grid() {
        let mut s = sheet(json!([["a", "b"], ["c", "d"]]));
        let cells = s.grid_cells();
        let sh = s.sheet_mut(0).unwrap();
        sh.insert_dimension(Dimension::Rows, 1, 3, false, cells).unwrap();
        sh.insert_dimension(Dimension::Columns, 1, 2, true, cells).unwrap();
        let expected = json!([["a", null, "b"], [], [], ["c", null, "d"]]);
        assert_eq!(json!(sh.values()), expected);
        assert_eq!((sh.row_count, sh.column_count), (1002, 27));
        // At the very end only with inheritFromBefore; never before row 0 with it.
        assert!(sh.insert_dimension(Dimension::Rows, 1002, 1003, false, cells).unwrap_err().contains("(1002)"));
        sh.insert_dimension(Dimension::Rows, 1002, 1003, true, cells).unwrap();
        assert!(sh.insert_dimension(Dimension::Rows, 0, 1, true, cells).unwrap_err().contains("greater than 0"));
        let full = sh.insert_dimension(Dimension::Rows, 0, 400_000, false, cells).unwrap_err();
        assert!(full.contains("limit of 10000000 cells"), "{full}");
    }

    #[test]
    fn sorting_moves_only_the_range_and_puts_blanks_last() {
        let rows = json!([
            ["head", "er", "keep"],
            ["pear", 3, "p"],
            ["Apple", null, "a"],
            ["fig", 10, "f"],
            ["date", "x", "d"],
            ["cherry", 3, "c"],
            ["last", 0, "l"]
        ]);
        let mut s = sheet(rows);
        let sh = s.sheet_mut(0).unwrap();
        let (rows, columns) = (Span { start: Some(1), end: Some(6) }, Span { start: Some(0), end: Some(2) });
        assert_eq!(sh.sort_range(rows, columns, &[SortKey { column: 1, descending: false }]), Ok(5));
        let column = |sh: &Sheet, c: usize| sh.values().iter().map(|r| r.get(c).cloned()).collect::<Vec<_>>();
        let texts = |names: &[&str]| names.iter().map(|n| Some(json!(n))).collect::<Vec<_>>();
        // Numbers (ties in order), then text, then the blank; rows 0 and 6 stay.
        assert_eq!(column(sh, 0), texts(&["head", "pear", "cherry", "fig", "date", "Apple", "last"]));
        // Column C is outside the range: it did not move.
        assert_eq!(column(sh, 2), texts(&["keep", "p", "a", "f", "d", "c", "l"]));
        let descending = [SortKey { column: 1, descending: true }, SortKey { column: 0, descending: false }];
        sh.sort_range(rows, columns, &descending).unwrap();
        assert_eq!(column(sh, 0), texts(&["head", "date", "fig", "cherry", "pear", "Apple", "last"]));
        let outside = sh.sort_range(rows, columns, &[SortKey { column: 2, descending: false }]).unwrap_err();
        assert!(outside.contains("sortSpecs[0].dimensionIndex (2)"), "{outside}");
        let past = sh.sort_range(Span { start: None, end: Some(1001) }, Span::default(), &descending).unwrap_err();
        assert_eq!(past, "Range ('S'!A1:Z1001) exceeds grid limits. Max rows: 1000, max columns: 26");
        assert!(sh.sort_range(Span::default(), Span::default(), &[]).is_err());
    }

    #[test]
    fn text_ignores_case_and_formulas_sort_after_booleans() {
        let formula = json!({"formula": "=1+1"});
        let mut cells = [formula.clone(), json!(true), json!("b"), json!("A"), json!(2), json!(-1)];
        cells.sort_by(|a, b| compare(a, b, false));
        assert_eq!(cells, [json!(-1), json!(2), json!("A"), json!("b"), json!(true), formula]);
    }
}
