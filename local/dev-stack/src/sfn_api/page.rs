//! Paging, as Step Functions' list calls do it: `maxResults` (1 to 1000;
//! 0 or none means 100) and an opaque `nextToken` for where the next page
//! starts.

use super::error::ApiError;
use serde_json::Value;

/// Results per page when the caller names no number.
const DEFAULT_PAGE: usize = 100;
const MAX_PAGE: i64 = 1000;

/// The page of `items` that `next_token` points at, and the token of the
/// page after it (none on the last page).
pub(super) fn page<'a, T>(
    items: &'a [T],
    max_results: Option<i64>,
    next_token: Option<&str>,
) -> Result<(&'a [T], Option<String>), ApiError> {
    let size = match max_results {
        None | Some(0) => DEFAULT_PAGE,
        Some(n @ 1..=MAX_PAGE) => n as usize,
        Some(n) => {
            return Err(ApiError::validation(format!(
                "1 validation error detected: Value '{n}' at 'maxResults' failed to satisfy constraint: Member \
                 must have value between 0 and {MAX_PAGE}"
            )));
        }
    };
    let start = match next_token {
        None => 0,
        Some(token) => token
            .strip_prefix("page:")
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&n| n <= items.len())
            .ok_or_else(|| ApiError::invalid_token(format!("Invalid Token: '{token}'")))?,
    };
    let end = (start + size).min(items.len());
    let next = (end < items.len()).then(|| format!("page:{end}"));
    Ok((&items[start..end], next))
}

/// `answer` with the `nextToken` of the page after it, if any.
pub(super) fn with_next(mut answer: Value, next: Option<String>) -> Value {
    if let Some(next) = next {
        answer["nextToken"] = next.into();
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_follow_each_other_to_the_end() {
        let items: Vec<u32> = (0..5).collect();
        let (first, token) = page(&items, Some(2), None).unwrap();
        assert_eq!((first, token.as_deref()), (&[0, 1][..], Some("page:2")));
        let (second, token) = page(&items, Some(2), token.as_deref()).unwrap();
        assert_eq!((second, token.as_deref()), (&[2, 3][..], Some("page:4")));
        let (last, token) = page(&items, Some(2), token.as_deref()).unwrap();
        assert_eq!((last, token), (&[4][..], None));
        assert_eq!(page(&items, None, None).unwrap().0.len(), 5);
    }

    #[test]
    fn a_bad_size_or_token_is_refused_naming_it() {
        let items = [1, 2, 3];
        assert_eq!(page(&items, Some(1001), None).unwrap_err().code, "ValidationException");
        assert_eq!(page(&items, Some(-1), None).unwrap_err().code, "ValidationException");
        let bad = page(&items, None, Some("page:9")).unwrap_err();
        assert_eq!((bad.code, bad.message.as_str()), ("InvalidToken", "Invalid Token: 'page:9'"));
        assert_eq!(page(&items, None, Some("x")).unwrap_err().code, "InvalidToken");
    }
}
