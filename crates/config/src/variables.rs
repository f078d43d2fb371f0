//! [`Variable`]: one line of documentation per variable, kept beside the
//! struct that reads it, and [`table`], which renders a part's variables
//! with the defaults its `Default` gives. `functions/README.md` holds the
//! rendered tables; a test fails when they differ from the code, and when a
//! part's fields and its list disagree.

use serde_json::Value;

/// A variable as the documentation shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variable {
    /// The field name, which is the variable's name without `SLUICE_`.
    pub field: &'static str,
    /// Who must set it: "yes", "no", or the condition.
    pub required: &'static str,
    pub meaning: &'static str,
}

/// Declares one part of the configuration from one line per variable:
/// `field: Type = default, "required", "meaning";`. It gives the struct
/// figment reads the part into (a field is a variable's name without the
/// prefix; an unset one keeps its default), that struct's `Default`, the
/// part's `VARIABLES` for the tables, and `defaults()`, the defaults as
/// the tables show them. `struct Vars(d = Library::default())` binds `d`
/// for the default expressions, so a default comes from the library that
/// uses the setting instead of being written again here.
macro_rules! part {
    (
        $(#[$attr:meta])*
        $vis:vis struct $name:ident $(($d:ident = $init:expr))? {
            $($fvis:vis $field:ident: $ty:ty = $default:expr, $required:literal, $meaning:expr;)*
        }
    ) => {
        $(#[$attr])*
        #[derive(serde::Deserialize, serde::Serialize)]
        #[serde(default)]
        $vis struct $name {
            $($fvis $field: $ty,)*
        }

        impl Default for $name {
            fn default() -> Self {
                $(let $d = $init;)?
                Self { $($field: $default,)* }
            }
        }

        pub(crate) const VARIABLES: &[$crate::Variable] =
            &[$($crate::Variable { field: stringify!($field), required: $required, meaning: $meaning },)*];

        pub(crate) fn defaults() -> serde_json::Value {
            serde_json::to_value($name::default()).unwrap_or_default()
        }
    };
}
pub(crate) use part;

/// Every part's variables, with the defaults of its fields as JSON, and
/// the title of its table in `functions/README.md`.
pub(crate) fn parts() -> [(&'static str, &'static [Variable], Value); 9] {
    [
        ("Every function", crate::common::VARIABLES, crate::common::defaults()),
        ("The step functions' settings", crate::pipeline_vars::VARIABLES, crate::pipeline_vars::defaults()),
        ("The shop functions", crate::cafe24_vars::VARIABLES, crate::cafe24_vars::defaults()),
        ("The sheet functions", crate::sheet_vars::VARIABLES, crate::sheet_vars::defaults()),
        (
            "Alerts (flush-sheet, ensure-token, fetch, catch-up)",
            crate::alert_vars::VARIABLES,
            crate::alert_vars::defaults(),
        ),
        ("The ingest function", crate::ingest_vars::VARIABLES, crate::ingest_vars::defaults()),
        (
            "Flow control per mall (ingest, fetch, the catch-up function) and per sheet (ingest)",
            crate::flow_vars::VARIABLES,
            crate::flow_vars::defaults(),
        ),
        ("The operator commands", crate::cli_vars::VARIABLES, crate::cli_vars::defaults()),
        ("The database (drain)", crate::database_vars::VARIABLES, crate::database_vars::defaults()),
    ]
}

/// What the variable `name` is, from whichever table lists it.
pub(crate) fn meaning(name: &str) -> Option<&'static str> {
    let field = name.strip_prefix(crate::PREFIX)?.to_ascii_lowercase();
    parts().iter().flat_map(|(_, vars, _)| vars.iter()).find(|v| v.field == field).map(|v| v.meaning)
}

/// Whether `name` (`SLUICE_QUEUE_URL`) is a variable some configuration
/// reads: what a deployment may set.
pub fn is_variable(name: &str) -> bool {
    meaning(name).is_some()
}

/// The Markdown table of `vars`, each with its default from `defaults`.
pub fn table(vars: &[Variable], defaults: &Value) -> String {
    let mut out = String::from("| variable | required | meaning (default) |\n|---|---|---|\n");
    for var in vars {
        let default = match defaults.get(var.field) {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) if s.is_empty() => String::new(),
            Some(Value::String(s)) => format!(" (`{s}`)"),
            Some(other) => format!(" (`{other}`)"),
        };
        let name = crate::variable(var.field);
        out.push_str(&format!("| `{name}` | {} | {}{default} |\n", var.required, var.meaning));
    }
    out
}

/// Every part's table under its title, as `functions/README.md` shows them.
pub fn all_tables() -> String {
    parts()
        .iter()
        .map(|(title, vars, defaults)| format!("### {title}\n\n{}", table(vars, defaults)))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn each_part_lists_exactly_its_fields() {
        for (title, vars, defaults) in parts() {
            let fields: BTreeSet<&str> = defaults.as_object().unwrap().keys().map(String::as_str).collect();
            let listed: BTreeSet<&str> = vars.iter().map(|v| v.field).collect();
            assert_eq!(fields, listed, "{title}: the struct's fields and its VARIABLES differ");
            assert_eq!(listed.len(), vars.len(), "{title}: a variable is listed twice");
        }
    }

    #[test]
    fn the_functions_readme_shows_the_tables_of_the_code() {
        let readme =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../functions/README.md")).unwrap();
        let tables = all_tables();
        assert!(
            readme.contains(&tables),
            "functions/README.md's variable tables differ from the code; replace them with:\n\n{tables}"
        );
    }

    #[test]
    fn a_missing_variable_is_explained_by_its_table() {
        assert_eq!(meaning("SLUICE_QUEUE_URL"), Some("the SQS FIFO queue's URL (it ends in `.fifo`)"));
        assert_eq!(meaning("SLUICE_NOPE"), None);
        assert!(is_variable("SLUICE_REDIS_URL") && !is_variable("SLUICE_NOPE") && !is_variable("RUST_LOG"));
    }
}
