//! Spreadsheets, their sheets and cells, and what `values.get`,
//! `values.append` and `values.update` do to them.
//!
//! A sheet starts with Google's default grid of 1000 rows × 26 columns and
//! holds its cells as rows of JSON values (`Null`: empty), kept trimmed:
//! no trailing empty cells in a row, no trailing empty rows, so the data
//! ends at the last row that has a value.
//!
//! - **append** (table detection simplified): rows go after the last row
//!   of the sheet that has any value, or at the range's first row if that
//!   is further down, starting at the range's first column (`A` for a
//!   whole sheet or `A:Z`). `tableRange` is the rows that have data (first
//!   to last) across the range's first column to the widest data column,
//!   and is absent when the sheet held nothing. `INSERT_ROWS` grows the
//!   grid by the rows appended; `OVERWRITE` only as far as needed.
//! - **update**: a single-cell range is the top-left of the block written;
//!   a larger range bounds it (writing past it is refused, as Google does);
//!   nothing may land outside the grid.
//! - **get**: the range clipped to nothing, answered as Google names it
//!   (`Sheet1!A1:Z1000` for `Sheet1`), trailing empty rows and cells
//!   trimmed. A range past the grid is refused.
//!
//! Every refusal is a 400 whose message Google would give
//! (`Unable to parse range: …`, `… exceeds grid limits …`).
//!
//! What people do to rows and columns (delete, insert, sort) is in
//! [`edits`].

mod edits;

use crate::sheets::a1::{self, Cells, Rect};
use crate::sheets::cells::{CellWrite, InputOption, RenderOption, cell_write};
use serde_json::{Value, json};
use std::collections::BTreeSet;

pub(crate) use edits::{Dimension, SortKey, Span};

/// Google's grid for a new sheet.
const DEFAULT_ROWS: u32 = 1000;
const DEFAULT_COLUMNS: u32 = 26;

/// A request the grid refuses: Google's 400 `INVALID_ARGUMENT` message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadRequest(pub(crate) String);

/// `majorDimension`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Major {
    Rows,
    Columns,
}

impl Major {
    pub(crate) fn parse(text: Option<&str>) -> Result<Self, BadRequest> {
        match text {
            None | Some("ROWS") | Some("DIMENSION_UNSPECIFIED") => Ok(Self::Rows),
            Some("COLUMNS") => Ok(Self::Columns),
            Some(other) => Err(BadRequest(format!("Invalid value at 'major_dimension' ({other})"))),
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Rows => "ROWS",
            Self::Columns => "COLUMNS",
        }
    }
}

/// One sheet (tab) of a spreadsheet.
#[derive(Debug, Clone)]
pub(crate) struct Sheet {
    pub(crate) gid: u64,
    pub(crate) title: String,
    rows: Vec<Vec<Value>>,
    row_count: u32,
    column_count: u32,
}

/// A spreadsheet: its sheets in tab order and the users refused access.
#[derive(Debug, Clone, Default)]
pub(crate) struct Spreadsheet {
    pub(crate) sheets: Vec<Sheet>,
    pub(crate) denied: BTreeSet<String>,
}

/// What `values.get` answers: the range as Google names it, and the values.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Read {
    pub(crate) range: String,
    pub(crate) values: Vec<Vec<Value>>,
}

/// Where a write landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Written {
    /// `Title!A6:C7`; `None` when nothing was written.
    pub(crate) range: Option<String>,
    pub(crate) rows: usize,
    pub(crate) columns: usize,
    pub(crate) cells: usize,
}

impl Spreadsheet {
    /// Sheets from `(gid, title)`; gids and titles must be unique.
    pub(crate) fn new(sheets: &[(u64, &str)]) -> Result<Self, String> {
        let mut spreadsheet = Self::default();
        sheets.iter().try_for_each(|(gid, title)| spreadsheet.add_sheet(*gid, title))?;
        Ok(spreadsheet)
    }

    pub(crate) fn add_sheet(&mut self, gid: u64, title: &str) -> Result<(), String> {
        if title.is_empty() {
            return Err(format!("sheet {gid} needs a title"));
        }
        if self.sheets.iter().any(|s| s.gid == gid || s.title == title) {
            return Err(format!("a sheet with gid {gid} or title `{title}` already exists"));
        }
        let (title, rows) = (title.to_owned(), Vec::new());
        self.sheets.push(Sheet { gid, title, rows, row_count: DEFAULT_ROWS, column_count: DEFAULT_COLUMNS });
        Ok(())
    }

    pub(crate) fn sheet(&self, gid: u64) -> Option<&Sheet> {
        self.sheets.iter().find(|s| s.gid == gid)
    }

    /// `spreadsheets.get`'s `sheets` list.
    pub(crate) fn sheet_properties(&self) -> Vec<Value> {
        let list = self.sheets.iter().enumerate();
        list.map(|(index, s)| {
            json!({"properties": {"sheetId": s.gid, "title": s.title, "index": index, "sheetType": "GRID",
                   "gridProperties": {"rowCount": s.row_count, "columnCount": s.column_count}}})
        })
        .collect()
    }

    /// The sheet a range names (no title: the first) and its cells.
    fn resolve(&self, range: &str) -> Result<(usize, Option<Cells>), BadRequest> {
        let unparsable = || BadRequest(format!("Unable to parse range: {range}"));
        let parsed = a1::parse(range).ok_or_else(unparsable)?;
        let index = match &parsed.title {
            None if self.sheets.is_empty() => return Err(unparsable()),
            None => 0,
            Some(title) => self.sheets.iter().position(|s| &s.title == title).ok_or_else(unparsable)?,
        };
        Ok((index, parsed.cells))
    }

    pub(crate) fn get(&self, range: &str, major: Major, render: RenderOption) -> Result<Read, BadRequest> {
        let (index, cells) = self.resolve(range)?;
        let sheet = &self.sheets[index];
        let rect = sheet.rect(cells);
        sheet.check_within_grid(rect)?;
        let cell = |r: u32, c: u32| sheet.held(r, c).map_or(Value::Null, Value::clone);
        let rows = rect.first_row..=rect.last_row.min(sheet.rows.len() as u32);
        let columns = rect.first_column..=rect.last_column;
        let lines: Vec<Vec<Value>> = match major {
            Major::Rows => rows.map(|r| columns.clone().map(|c| cell(r, c)).collect()).collect(),
            Major::Columns => columns.map(|c| rows.clone().map(|r| cell(r, c)).collect()).collect(),
        };
        let values = trimmed(lines).into_iter().map(|line| line.iter().map(|v| render.show(v)).collect()).collect();
        Ok(Read { range: sheet.name_range(rect), values })
    }

    /// Appends rows (already row-major); returns the `tableRange` before
    /// the append and where the rows landed.
    pub(crate) fn append(
        &mut self,
        range: &str,
        values: &[Vec<Value>],
        option: InputOption,
        insert_rows: bool,
    ) -> Result<(Option<String>, Written), BadRequest> {
        let (index, cells) = self.resolve(range)?;
        let writes = convert(values, option)?;
        let sheet = &mut self.sheets[index];
        let anchor = sheet.rect(cells);
        let filled = sheet.rows.len() as u32;
        let table = sheet.rows.iter().position(|row| !row.is_empty()).map(|first| {
            let widest = sheet.rows.iter().map(Vec::len).max().unwrap_or(0) as u32;
            let rect = Rect {
                first_row: first as u32 + 1,
                last_row: filled,
                first_column: anchor.first_column,
                last_column: widest.max(anchor.first_column),
            };
            sheet.name_range(rect)
        });
        let first_row = (filled + 1).max(anchor.first_row);
        let written = sheet.write(first_row, anchor.first_column, &writes);
        if insert_rows {
            sheet.row_count = sheet.row_count.saturating_add(writes.len() as u32);
        }
        sheet.grow_to_fit();
        Ok((table, written))
    }

    /// Writes rows (already row-major) at `range`.
    pub(crate) fn update(
        &mut self,
        range: &str,
        values: &[Vec<Value>],
        option: InputOption,
    ) -> Result<Written, BadRequest> {
        let (index, cells) = self.resolve(range)?;
        let writes = convert(values, option)?;
        let sheet = &mut self.sheets[index];
        let bounds = sheet.rect(cells);
        let (rows, width) = (writes.len() as u32, writes.iter().map(Vec::len).max().unwrap_or(0) as u32);
        let block = Rect {
            first_row: bounds.first_row,
            last_row: bounds.first_row + rows.max(1) - 1,
            first_column: bounds.first_column,
            last_column: bounds.first_column + width.max(1) - 1,
        };
        if !cells.is_some_and(|c| c.is_single_cell()) {
            let requested = sheet.name_range(bounds);
            if block.last_row > bounds.last_row {
                let row = block.last_row;
                return Err(BadRequest(format!(
                    "Requested writing within range [{requested}], but tried writing to row [{row}]"
                )));
            }
            if block.last_column > bounds.last_column {
                let column = a1::column_letters(block.last_column);
                return Err(BadRequest(format!(
                    "Requested writing within range [{requested}], but tried writing to column [{column}]"
                )));
            }
        }
        sheet.check_within_grid(block)?;
        Ok(sheet.write(block.first_row, block.first_column, &writes))
    }
}

impl Sheet {
    /// The cells of a range on this sheet's grid (none: all of it).
    fn rect(&self, cells: Option<Cells>) -> Rect {
        match cells {
            Some(cells) => cells.within(self.row_count, self.column_count),
            None => Rect { first_row: 1, last_row: self.row_count, first_column: 1, last_column: self.column_count },
        }
    }

    fn check_within_grid(&self, rect: Rect) -> Result<(), BadRequest> {
        if rect.last_row <= self.row_count && rect.last_column <= self.column_count {
            return Ok(());
        }
        Err(BadRequest(format!(
            "Range ({}!{}) exceeds grid limits. Max rows: {}, max columns: {}",
            a1::quote_title(&self.title),
            rect.a1(),
            self.row_count,
            self.column_count
        )))
    }

    /// `Title!A1:C5` with the title as Google writes it.
    fn name_range(&self, rect: Rect) -> String {
        format!("{}!{}", a1::format_title(&self.title), rect.a1())
    }

    /// The held value at 1-based (row, column); `None` when empty.
    fn held(&self, row: u32, column: u32) -> Option<&Value> {
        let row = self.rows.get(row as usize - 1)?;
        row.get(column as usize - 1).filter(|v| !v.is_null())
    }

    /// Writes the block with its top-left at 1-based (row, column).
    fn write(&mut self, first_row: u32, first_column: u32, writes: &[Vec<CellWrite>]) -> Written {
        let mut cells = 0;
        for (i, line) in writes.iter().enumerate() {
            let r = first_row as usize - 1 + i;
            for (j, write) in line.iter().enumerate() {
                let CellWrite::Set(value) = write else { continue };
                cells += 1;
                let c = first_column as usize - 1 + j;
                if self.rows.len() <= r {
                    self.rows.resize(r + 1, Vec::new());
                }
                let row = &mut self.rows[r];
                if row.len() <= c {
                    row.resize(c + 1, Value::Null);
                }
                row[c] = value.clone();
            }
            if let Some(row) = self.rows.get_mut(r) {
                trim_end(row, Value::is_null);
            }
        }
        trim_end(&mut self.rows, Vec::is_empty);
        let (rows, columns) = (writes.len(), writes.iter().map(Vec::len).max().unwrap_or(0));
        let range = (rows > 0 && columns > 0).then(|| {
            self.name_range(Rect {
                first_row,
                last_row: first_row + rows as u32 - 1,
                first_column,
                last_column: first_column + columns as u32 - 1,
            })
        });
        Written { range, rows, columns, cells }
    }

    /// Appends may run past the grid; the grid follows the data.
    fn grow_to_fit(&mut self) {
        self.row_count = self.row_count.max(self.rows.len() as u32);
        let widest = self.rows.iter().map(Vec::len).max().unwrap_or(0) as u32;
        self.column_count = self.column_count.max(widest);
    }

    /// Every row as held, trailing empties trimmed; empty cells are `Null`.
    pub(crate) fn values(&self) -> Vec<Vec<Value>> {
        self.rows.clone()
    }

    /// A person typing `values` (as `RAW`) into the rows below the data.
    pub(crate) fn type_below(&mut self, values: &[Vec<Value>]) -> Result<(), String> {
        let writes = convert(values, InputOption::Raw).map_err(|e| e.0)?;
        self.write(self.rows.len() as u32 + 1, 1, &writes);
        self.grow_to_fit();
        Ok(())
    }

    /// The last row with a value (0: the sheet is empty).
    pub(crate) fn filled_rows(&self) -> usize {
        self.rows.len()
    }
}

/// Request values as cell writes; any bad value refuses the whole write.
fn convert(values: &[Vec<Value>], option: InputOption) -> Result<Vec<Vec<CellWrite>>, BadRequest> {
    let line = |(i, row): (usize, &Vec<Value>)| {
        row.iter().enumerate().map(|(j, v)| cell_write(v, option, i, j)).collect::<Result<Vec<_>, _>>()
    };
    values.iter().enumerate().map(line).collect::<Result<_, _>>().map_err(BadRequest)
}

/// Columns given as `majorDimension: COLUMNS`, as rows; gaps are skipped
/// cells.
pub(crate) fn columns_to_rows(columns: &[Vec<Value>]) -> Vec<Vec<Value>> {
    let height = columns.iter().map(Vec::len).max().unwrap_or(0);
    (0..height).map(|r| columns.iter().map(|col| col.get(r).cloned().unwrap_or(Value::Null)).collect()).collect()
}

/// Drops trailing empty cells of each line, then trailing empty lines.
fn trimmed(mut lines: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    for line in &mut lines {
        trim_end(line, Value::is_null);
    }
    trim_end(&mut lines, Vec::is_empty);
    lines
}

fn trim_end<T>(items: &mut Vec<T>, empty: impl Fn(&T) -> bool) {
    while items.last().is_some_and(&empty) {
        items.pop();
    }
}
