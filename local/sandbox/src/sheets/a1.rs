//! A1 notation as the Sheets API accepts it in a request path, and as it
//! writes ranges back in answers.
//!
//! Accepted: `Sheet1!A1:C10`, `'My sheet'!A:A`, `Sheet1!A5:A` (open end),
//! `Sheet1!1:3` (whole rows), `Sheet1!B2` (one cell), `Sheet1` or
//! `'My sheet'` (the whole sheet), and cells without a title (`A1:C10`:
//! the first sheet). Inside quotes an apostrophe is doubled (`'Jon''s'`).
//! Bare text that reads as cells is cells (`A1` is a cell, `'A1'` a sheet),
//! as Google reads it; column letters may be lower case.
//!
//! Answers write a title bare when it is a plain ASCII identifier that
//! cannot be read as a cell (`Sheet1`) and quoted otherwise
//! (`'Form responses'`), as Google does.
//!
//! This is the sandbox's own reading of Google's rules, written apart from
//! `sluice-sheets`' `a1` module on purpose: the client is tested against
//! the sandbox, and one shared parser would let a misreading pass on both
//! sides (hence the few lines, such as `unquote`, that read alike).

/// `ZZZ`: the last column A1 notation can name.
const MAX_COLUMN: u32 = 18_278;
/// No sheet has more rows: Google caps a spreadsheet at ten million cells.
const MAX_ROW: u32 = 10_000_000;

/// One corner of a range: a cell (`B5`), a column (`B`) or a row (`5`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Corner {
    pub(crate) column: Option<u32>,
    pub(crate) row: Option<u32>,
}

/// The cells part of a range, corners as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cells {
    pub(crate) start: Corner,
    pub(crate) end: Corner,
}

/// A parsed range: the sheet title (none: the first sheet) and the cells
/// (none: the whole sheet). Never both none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RangeRef {
    pub(crate) title: Option<String>,
    pub(crate) cells: Option<Cells>,
}

/// A rectangle of cells, 1-based and inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rect {
    pub(crate) first_row: u32,
    pub(crate) last_row: u32,
    pub(crate) first_column: u32,
    pub(crate) last_column: u32,
}

impl Rect {
    /// `A1:C5`; `B2` for a single cell.
    pub(crate) fn a1(&self) -> String {
        let start = format!("{}{}", column_letters(self.first_column), self.first_row);
        let end = format!("{}{}", column_letters(self.last_column), self.last_row);
        if start == end { start } else { format!("{start}:{end}") }
    }
}

impl Cells {
    /// The rectangle on a grid of `rows` × `columns`: a missing start is
    /// the first row or column, a missing end the grid's last. Corners may
    /// come in either order (`B2:A1` is `A1:B2`), as Google allows.
    pub(crate) fn within(&self, rows: u32, columns: u32) -> Rect {
        let ordered = |a: u32, b: u32| (a.min(b), a.max(b));
        let (first_row, last_row) = ordered(self.start.row.unwrap_or(1), self.end.row.unwrap_or(rows));
        let (first_column, last_column) = ordered(self.start.column.unwrap_or(1), self.end.column.unwrap_or(columns));
        Rect { first_row, last_row, first_column, last_column }
    }

    /// `B2` (or `B2:B2`): the anchor of a write rather than its bounds.
    pub(crate) fn is_single_cell(&self) -> bool {
        self.start == self.end && self.start.column.is_some() && self.start.row.is_some()
    }
}

/// Reads a range; `None` when it is not A1 notation.
pub(crate) fn parse(text: &str) -> Option<RangeRef> {
    if let Some(after_quote) = text.strip_prefix('\'') {
        let (title, rest) = unquote(after_quote)?;
        if title.is_empty() {
            return None;
        }
        let cells = match rest {
            "" => None,
            _ => Some(parse_cells(rest.strip_prefix('!')?)?),
        };
        return Some(RangeRef { title: Some(title), cells });
    }
    match text.rsplit_once('!') {
        Some((title, cells)) if !title.is_empty() => {
            Some(RangeRef { title: Some(title.to_owned()), cells: Some(parse_cells(cells)?) })
        }
        Some(_) => None,
        None if text.is_empty() => None,
        None => match parse_cells(text) {
            Some(cells) => Some(RangeRef { title: None, cells: Some(cells) }),
            None => Some(RangeRef { title: Some(text.to_owned()), cells: None }),
        },
    }
}

/// The title up to the closing quote (doubled quotes are one apostrophe)
/// and what follows it.
fn unquote(text: &str) -> Option<(String, &str)> {
    let mut title = String::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '\'' {
            title.push(c);
        } else if chars.peek().is_some_and(|(_, next)| *next == '\'') {
            chars.next();
            title.push('\'');
        } else {
            return Some((title, &text[i + 1..]));
        }
    }
    None
}

fn parse_cells(text: &str) -> Option<Cells> {
    match text.split_once(':') {
        Some((a, b)) => Some(Cells { start: parse_corner(a)?, end: parse_corner(b)? }),
        None => {
            let cell = parse_corner(text)?;
            // A lone column or row would be a sheet title, not cells.
            (cell.column.is_some() && cell.row.is_some()).then_some(Cells { start: cell, end: cell })
        }
    }
}

fn parse_corner(text: &str) -> Option<Corner> {
    let digits_at = text.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(text.len());
    let (letters, digits) = text.split_at(digits_at);
    let column = if letters.is_empty() { None } else { Some(column_number(letters)?) };
    let row = if digits.is_empty() {
        None
    } else if digits.bytes().all(|b| b.is_ascii_digit()) {
        Some(digits.parse::<u32>().ok().filter(|r| (1..=MAX_ROW).contains(r))?)
    } else {
        return None;
    };
    (column.is_some() || row.is_some()).then_some(Corner { column, row })
}

/// `A` → 1, `aa` → 27, up to `ZZZ`.
fn column_number(letters: &str) -> Option<u32> {
    if letters.is_empty() || letters.len() > 3 || !letters.bytes().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    let n = letters.bytes().fold(0u32, |n, b| n * 26 + u32::from(b.to_ascii_uppercase() - b'A' + 1));
    (n <= MAX_COLUMN).then_some(n)
}

/// 1 → `A`, 27 → `AA`.
pub(crate) fn column_letters(mut column: u32) -> String {
    let mut letters = Vec::new();
    while column > 0 {
        letters.push(b'A' + ((column - 1) % 26) as u8);
        column = (column - 1) / 26;
    }
    letters.reverse();
    String::from_utf8(letters).unwrap_or_default()
}

/// The title as answers write it: bare when plain, quoted otherwise.
pub(crate) fn format_title(title: &str) -> String {
    let plain = title.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && title.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain && !reads_as_cell(title) { title.to_owned() } else { quote_title(title) }
}

/// The title in single quotes, apostrophes doubled.
pub(crate) fn quote_title(title: &str) -> String {
    format!("'{}'", title.replace('\'', "''"))
}

/// `AB12` (A1 style) or `R1C1` (R1C1 style): a title that must be quoted.
fn reads_as_cell(text: &str) -> bool {
    let a1 = parse_corner(text).is_some_and(|c| c.column.is_some() && c.row.is_some());
    let upper = text.to_ascii_uppercase();
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let r1c1 =
        upper.strip_prefix('R').and_then(|rest| rest.split_once('C')).is_some_and(|(r, c)| digits(r) && digits(c));
    a1 || r1c1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corner(column: Option<u32>, row: Option<u32>) -> Corner {
        Corner { column, row }
    }

    #[test]
    fn reads_the_forms_the_api_accepts() {
        let r = parse("'Jon''s data'!A5:A").unwrap();
        assert_eq!(r.title.as_deref(), Some("Jon's data"));
        assert_eq!(r.cells.unwrap().start, corner(Some(1), Some(5)));
        assert_eq!(r.cells.unwrap().end, corner(Some(1), None));
        let r = parse("Sheet1!b2:c10").unwrap();
        assert_eq!(
            r.cells.unwrap().within(1000, 26),
            Rect { first_row: 2, last_row: 10, first_column: 2, last_column: 3 }
        );
        assert_eq!(parse("Sheet1").unwrap(), RangeRef { title: Some("Sheet1".into()), cells: None });
        assert_eq!(parse("'A1'").unwrap(), RangeRef { title: Some("A1".into()), cells: None });
        assert_eq!(parse("A1:B2").unwrap().title, None);
        let rows = parse("S!3:1").unwrap().cells.unwrap().within(1000, 26);
        assert_eq!(rows, Rect { first_row: 1, last_row: 3, first_column: 1, last_column: 26 });
        assert!(parse("Sheet1!A1:B2:C3").is_none());
        assert!(parse("'unterminated!A1").is_none());
        assert!(parse("Sheet1!").is_none());
        assert!(parse("Sheet1!AAAA1").is_none());
        assert!(parse("Sheet1!A0").is_none());
        assert!(parse("").is_none());
    }

    #[test]
    fn writes_ranges_as_google_does() {
        assert_eq!(format_title("Sheet1"), "Sheet1");
        assert_eq!(format_title("Form responses"), "'Form responses'");
        assert_eq!(format_title("AB12"), "'AB12'");
        assert_eq!(format_title("r1c1"), "'r1c1'");
        assert_eq!(format_title("it's"), "'it''s'");
        assert_eq!(column_letters(1), "A");
        assert_eq!(column_letters(27), "AA");
        assert_eq!(column_letters(MAX_COLUMN), "ZZZ");
        assert_eq!(Rect { first_row: 6, last_row: 7, first_column: 1, last_column: 3 }.a1(), "A6:C7");
        assert_eq!(Rect { first_row: 2, last_row: 2, first_column: 2, last_column: 2 }.a1(), "B2");
    }
}
