//! A1 notation, as the Sheets API reads and writes it: `Sheet1!A1:D5`,
//! `'My Sheet'!A:A`, `Sheet1!A5:A`, `Sheet1!1:2`, `'Sheet1'`, `A1:B2`.
//!
//! Google's guide: a sheet title with spaces or special characters must be
//! single-quoted (`'My Custom Sheet'!A:A`), and a quoted name is the sheet
//! even where the bare text would be a cell (`A1` is a cell, `'A1'` the
//! sheet titled A1). Inside quotes an apostrophe is doubled (`'Jon''s
//! data'`), the spreadsheet formula convention; the guide's own example
//! `'Jon's_Data'` leaves it single, which cannot be parsed unambiguously,
//! so requests always double it.
//!
//! - Requests: [`quote_title`] always quotes, so no title is ever misread.
//! - Answers: Google quotes only where needed (`Sheet1!A6:D7`,
//!   `'Form responses'!A1:C2`); [`format_title`] does the same, and
//!   [`A1Range::parse`] reads both.
//!
//! Columns are 1-based (`A` = 1, `ZZZ` = [`MAX_COLUMNS`]), rows 1-based.

use std::fmt;

/// The highest column letters a range may name: `ZZZ`.
pub const MAX_COLUMNS: u32 = 18_278;

/// The highest row a range may name. Google caps a spreadsheet at ten
/// million cells, so no sheet has more rows than that.
pub const MAX_ROWS: u32 = 10_000_000;

/// A range that is not A1 notation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an A1 range")]
pub struct A1Error(pub String);

/// `1` → `A`, `27` → `AA`. Zero gives the empty string.
pub fn column_letters(column: u32) -> String {
    match column.checked_sub(1) {
        None => String::new(),
        Some(n) => format!("{}{}", column_letters(n / 26), char::from(b'A' + (n % 26) as u8)),
    }
}

/// `A` → 1, `aa` → 27; `None` for anything else or beyond `ZZZ`.
pub fn column_index(letters: &str) -> Option<u32> {
    if letters.is_empty() || letters.len() > 3 {
        return None;
    }
    let mut n: u32 = 0;
    for b in letters.bytes() {
        if !b.is_ascii_alphabetic() {
            return None;
        }
        n = n * 26 + u32::from(b.to_ascii_uppercase() - b'A' + 1);
    }
    (n <= MAX_COLUMNS).then_some(n)
}

/// The title in single quotes, apostrophes doubled: what requests send.
pub fn quote_title(title: &str) -> String {
    format!("'{}'", title.replace('\'', "''"))
}

/// The title as Google writes it in answers: bare when it is a plain
/// identifier that cannot be read as a cell (`Sheet1`), quoted otherwise
/// (`'Form responses'`, `'A1'`, `'R1C1'`).
pub fn format_title(title: &str) -> String {
    let plain = title.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && title.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain && !looks_like_a_cell(title) { title.to_owned() } else { quote_title(title) }
}

/// `A1`, `ab12` (A1 style) or `R1C1` (R1C1 style): a title spelled so needs
/// quotes.
fn looks_like_a_cell(text: &str) -> bool {
    let digits_at = text.find(|c: char| c.is_ascii_digit()).unwrap_or(text.len());
    let (letters, digits) = text.split_at(digits_at);
    let a1 = column_index(letters).is_some() && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    let upper = text.to_ascii_uppercase();
    let r1c1 = upper
        .strip_prefix('R')
        .and_then(|rest| rest.split_once('C'))
        .is_some_and(|(r, c)| [r, c].iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())));
    a1 || r1c1
}

/// One corner of a range: a cell (`B5`), a whole column (`B`) or a whole
/// row (`5`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CellRef {
    pub column: Option<u32>,
    pub row: Option<u32>,
}

impl CellRef {
    pub fn cell(column: u32, row: u32) -> Self {
        Self { column: Some(column), row: Some(row) }
    }

    fn parse(text: &str) -> Option<Self> {
        let digits_at = text.find(|c: char| c.is_ascii_digit()).unwrap_or(text.len());
        let (letters, digits) = text.split_at(digits_at);
        let column = if letters.is_empty() { None } else { Some(column_index(letters)?) };
        let row = if digits.is_empty() {
            None
        } else {
            if !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Some(digits.parse::<u32>().ok().filter(|r| (1..=MAX_ROWS).contains(r))?)
        };
        (column.is_some() || row.is_some()).then_some(Self { column, row })
    }
}

impl fmt::Display for CellRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(column) = self.column {
            f.write_str(&column_letters(column))?;
        }
        if let Some(row) = self.row {
            write!(f, "{row}")?;
        }
        Ok(())
    }
}

/// The cells part of a range: from `start` to `end` (equal for one cell).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CellRange {
    pub start: CellRef,
    pub end: CellRef,
}

impl CellRange {
    /// A fully bounded rectangle, 1-based and inclusive.
    pub fn rect(first_column: u32, first_row: u32, last_column: u32, last_row: u32) -> Self {
        Self { start: CellRef::cell(first_column, first_row), end: CellRef::cell(last_column, last_row) }
    }

    /// `A1`, `A1:D5`, `A:A`, `1:2`, `A5:A`. A lone corner must be a full
    /// cell (`A` alone would be a sheet title).
    pub fn parse(text: &str) -> Option<Self> {
        match text.split_once(':') {
            None => {
                let cell = CellRef::parse(text)?;
                (cell.column.is_some() && cell.row.is_some()).then_some(Self { start: cell, end: cell })
            }
            Some((a, b)) => Some(Self { start: CellRef::parse(a)?, end: CellRef::parse(b)? }),
        }
    }

    /// The first and last row when both are given.
    pub fn rows(&self) -> Option<(u32, u32)> {
        Some((self.start.row?, self.end.row?))
    }

    /// The first and last column when both are given.
    pub fn columns(&self) -> Option<(u32, u32)> {
        Some((self.start.column?, self.end.column?))
    }
}

impl fmt::Display for CellRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let single = self.start == self.end && self.start.column.is_some() && self.start.row.is_some();
        if single { write!(f, "{}", self.start) } else { write!(f, "{}:{}", self.start, self.end) }
    }
}

/// A range: an optional sheet title and optional cells (both absent is not
/// a range).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct A1Range {
    pub sheet: Option<String>,
    pub cells: Option<CellRange>,
}

impl A1Range {
    /// Every cell of one sheet.
    pub fn whole_sheet(title: impl Into<String>) -> Self {
        Self { sheet: Some(title.into()), cells: None }
    }

    pub fn new(title: impl Into<String>, cells: CellRange) -> Self {
        Self { sheet: Some(title.into()), cells: Some(cells) }
    }

    /// Reads `Title!cells`, `'Quoted title'!cells`, `'Quoted title'`,
    /// `cells` or a bare `Title` (bare text is cells when it parses as
    /// cells, as Google reads it).
    pub fn parse(text: &str) -> Result<Self, A1Error> {
        let bad = || A1Error(text.to_owned());
        if let Some(quoted) = text.strip_prefix('\'') {
            let (title, rest) = unquote(quoted).ok_or_else(bad)?;
            if title.is_empty() {
                return Err(bad());
            }
            return match rest.strip_prefix('!') {
                None if rest.is_empty() => Ok(Self::whole_sheet(title)),
                None => Err(bad()),
                Some(cells) => Ok(Self::new(title, CellRange::parse(cells).ok_or_else(bad)?)),
            };
        }
        match text.split_once('!') {
            Some((title, cells)) if !title.is_empty() => Ok(Self::new(title, CellRange::parse(cells).ok_or_else(bad)?)),
            Some(_) => Err(bad()),
            None if text.is_empty() => Err(bad()),
            None => Ok(match CellRange::parse(text) {
                Some(cells) => Self { sheet: None, cells: Some(cells) },
                None => Self::whole_sheet(text),
            }),
        }
    }

    /// The range as a request sends it: the title always quoted.
    pub fn to_request(&self) -> String {
        self.render(quote_title)
    }

    fn render(&self, title: fn(&str) -> String) -> String {
        match (&self.sheet, &self.cells) {
            (Some(sheet), Some(cells)) => format!("{}!{cells}", title(sheet)),
            (Some(sheet), None) => title(sheet),
            (None, Some(cells)) => cells.to_string(),
            (None, None) => String::new(),
        }
    }
}

/// The range as Google answers it: the title quoted only where needed.
impl fmt::Display for A1Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(format_title))
    }
}

/// Reads a quoted title after its opening quote: the title (`''` → `'`)
/// and what follows the closing quote.
fn unquote(text: &str) -> Option<(String, &str)> {
    let mut title = String::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '\'' {
            title.push(c);
        } else if chars.peek().is_some_and(|(_, next)| *next == '\'') {
            title.push('\'');
            chars.next();
        } else {
            return Some((title, &text[i + 1..]));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_round_trip() {
        for (n, letters) in [(1, "A"), (26, "Z"), (27, "AA"), (52, "AZ"), (703, "AAA"), (MAX_COLUMNS, "ZZZ")] {
            assert_eq!(column_letters(n), letters);
            assert_eq!(column_index(letters), Some(n));
        }
        assert_eq!(column_index("ab"), Some(28));
        assert_eq!(column_index("AAAA"), None);
        assert_eq!(column_index("A1"), None);
        assert_eq!(column_letters(0), "");
    }

    #[test]
    fn parses_googles_examples() {
        let r = A1Range::parse("Sheet1!A1:B2").unwrap();
        assert_eq!(r.sheet.as_deref(), Some("Sheet1"));
        assert_eq!(r.cells, Some(CellRange::rect(1, 1, 2, 2)));
        let r = A1Range::parse("Sheet1!A:A").unwrap().cells.unwrap();
        assert_eq!((r.columns(), r.rows()), (Some((1, 1)), None));
        let r = A1Range::parse("Sheet1!1:2").unwrap().cells.unwrap();
        assert_eq!((r.columns(), r.rows()), (None, Some((1, 2))));
        let r = A1Range::parse("Sheet1!A5:A").unwrap().cells.unwrap();
        assert_eq!((r.start, r.end.row), (CellRef::cell(1, 5), None));
        let r = A1Range::parse("A1:B2").unwrap();
        assert_eq!((r.sheet, r.cells), (None, Some(CellRange::rect(1, 1, 2, 2))));
        assert_eq!(A1Range::parse("Sheet1").unwrap(), A1Range::whole_sheet("Sheet1"));
        assert_eq!(A1Range::parse("'My Custom Sheet'!A:A").unwrap().sheet.as_deref(), Some("My Custom Sheet"));
        assert_eq!(A1Range::parse("'My Custom Sheet'").unwrap(), A1Range::whole_sheet("My Custom Sheet"));
        // Bare `A1` is a cell; quoted it is the sheet titled A1.
        assert_eq!(A1Range::parse("A1").unwrap().sheet, None);
        assert_eq!(A1Range::parse("'A1'").unwrap(), A1Range::whole_sheet("A1"));
    }

    #[test]
    fn quoting_round_trips_awkward_titles() {
        for title in ["Jon's data", "it''s", "a!b", "Form responses 1", "A1", "R1C1", "Sheet1", "데이터", "x'"] {
            let range = A1Range::new(title, CellRange::rect(1, 1, 3, 2));
            assert_eq!(A1Range::parse(&range.to_request()).unwrap(), range, "{title}");
            assert_eq!(A1Range::parse(&range.to_string()).unwrap(), range, "{title}");
        }
        assert_eq!(quote_title("Jon's"), "'Jon''s'");
        assert_eq!(format_title("Sheet1"), "Sheet1");
        assert_eq!(format_title("Form responses"), "'Form responses'");
        assert_eq!(format_title("AB12"), "'AB12'");
        assert_eq!(format_title("r2c3"), "'r2c3'");
        assert_eq!(A1Range::new("Sheet1", CellRange::rect(1, 6, 4, 7)).to_string(), "Sheet1!A6:D7");
        assert_eq!(A1Range::new("S", CellRange::rect(2, 3, 2, 3)).to_string(), "S!B3");
    }

    #[test]
    fn rejects_what_is_not_a1() {
        for bad in ["", "!A1", "'unterminated", "'t'x", "Sheet1!", "Sheet1!A0", "Sheet1!AAAA1", "S!A1:B2:C3", "''!A1"] {
            assert!(A1Range::parse(bad).is_err(), "{bad}");
        }
        assert!(A1Range::parse("Sheet1!A1:").is_err());
    }
}
