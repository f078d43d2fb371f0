//! Intrinsic functions (`States.Format(…)` and the rest) in payload
//! templates and in a Fail state's `ErrorPath`/`CausePath`: parsed at load,
//! evaluated against the state input and the context object. A failed call
//! is a `States.IntrinsicFailure`.
//! See <https://docs.aws.amazon.com/step-functions/latest/dg/intrinsic-functions.html>.
//!
//! - [`parser`]: the call syntax (literals, escapes, paths, nesting).
//! - [`arrays`], [`text`], [`encoding`], [`math`]: the functions.

mod arrays;
mod encoding;
mod math;
mod parser;
mod text;

use crate::context_object::ContextObject;
use crate::failure::{Failure, abbreviated};
use crate::path::Path;
use serde_json::Value;

/// One parsed call, such as `States.Format('{} items', $.count)`.
#[derive(Debug, Clone)]
pub(crate) struct Intrinsic {
    function: Function,
    args: Vec<Arg>,
}

/// An argument as written.
#[derive(Debug, Clone)]
enum Arg {
    /// A number, `true`, `false` or `null`.
    Literal(Value),
    /// A quoted string; `placeholders` are the byte offsets of the unescaped
    /// `{}` pairs in `value` (what `States.Format` fills in).
    Text {
        value: String,
        placeholders: Vec<usize>,
    },
    Path(Path),
    Call(Box<Intrinsic>),
}

macro_rules! functions {
    ($($variant:ident = $name:literal, $min:literal ..= $max:expr;)*) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Function { $($variant),* }

        impl Function {
            fn from_name(name: &str) -> Option<Self> {
                match name { $($name => Some(Self::$variant),)* _ => None }
            }
            fn name(self) -> &'static str {
                match self { $(Self::$variant => $name),* }
            }
            /// The least and the most arguments the function takes.
            fn arity(self) -> (usize, usize) {
                match self { $(Self::$variant => ($min, $max)),* }
            }
        }
    };
}

functions! {
    Format = "States.Format", 1..=usize::MAX;
    StringToJson = "States.StringToJson", 1..=1;
    JsonToString = "States.JsonToString", 1..=1;
    Array = "States.Array", 0..=usize::MAX;
    ArrayPartition = "States.ArrayPartition", 2..=2;
    ArrayContains = "States.ArrayContains", 2..=2;
    ArrayRange = "States.ArrayRange", 3..=3;
    ArrayGetItem = "States.ArrayGetItem", 2..=2;
    ArrayLength = "States.ArrayLength", 1..=1;
    ArrayUnique = "States.ArrayUnique", 1..=1;
    Base64Encode = "States.Base64Encode", 1..=1;
    Base64Decode = "States.Base64Decode", 1..=1;
    Hash = "States.Hash", 2..=2;
    JsonMerge = "States.JsonMerge", 3..=3;
    MathRandom = "States.MathRandom", 2..=3;
    MathAdd = "States.MathAdd", 2..=2;
    StringSplit = "States.StringSplit", 2..=2;
    Uuid = "States.UUID", 0..=0;
}

impl Intrinsic {
    /// Parses a whole intrinsic call, checking names, argument counts and
    /// what can be checked of the arguments before any input is seen.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        parser::parse(text).map_err(|e| format!("{text:?} is not a valid intrinsic function call: {e}"))
    }

    pub(crate) fn evaluate(&self, input: &Value, context: &ContextObject<'_>) -> Result<Value, Failure> {
        let mut values = Vec::with_capacity(self.args.len());
        for arg in &self.args {
            values.push(match arg {
                Arg::Literal(value) => value.clone(),
                Arg::Text { value, .. } => Value::String(value.clone()),
                Arg::Path(path) => path.select(input, context).ok_or_else(|| {
                    let document = if path.reads_context() { context.value() } else { input };
                    Failure::runtime(format!(
                        "The JsonPath argument '{}' of {} could not be found in the input '{}'",
                        path.text(),
                        self.function.name(),
                        abbreviated(document)
                    ))
                })?,
                Arg::Call(call) => call.evaluate(input, context)?,
            });
        }
        self.apply(values)
            .map_err(|e| Failure::intrinsic(format!("Invalid arguments in {}: {e}", self.function.name())))
    }

    fn apply(&self, args: Vec<Value>) -> Result<Value, String> {
        match self.function {
            Function::Format => {
                let template = match self.args.first() {
                    Some(Arg::Text { placeholders, .. }) => Some(placeholders.as_slice()),
                    _ => None,
                };
                text::format(args, template)
            }
            Function::StringToJson => text::string_to_json(args),
            Function::JsonToString => text::json_to_string(args),
            Function::StringSplit => text::string_split(args),
            Function::Uuid => Ok(text::uuid()),
            Function::Array => Ok(Value::Array(args)),
            Function::ArrayPartition => arrays::partition(args),
            Function::ArrayContains => arrays::contains(args),
            Function::ArrayRange => arrays::range(args),
            Function::ArrayGetItem => arrays::get_item(args),
            Function::ArrayLength => arrays::length(args),
            Function::ArrayUnique => arrays::unique(args),
            Function::JsonMerge => arrays::json_merge(args),
            Function::Base64Encode => encoding::base64_encode(args),
            Function::Base64Decode => encoding::base64_decode(args),
            Function::Hash => encoding::hash(args),
            Function::MathRandom => math::random(args),
            Function::MathAdd => math::add(args),
        }
    }
}

/// The arguments as an array of exactly `N` values (arity is checked at
/// load, so this only guards against misuse).
fn exactly<const N: usize>(args: Vec<Value>) -> Result<[Value; N], String> {
    let count = args.len();
    args.try_into().map_err(|_| format!("expected {N} arguments, got {count}"))
}

fn integer(value: &Value, what: &str) -> Result<i64, String> {
    match value {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15).map(|f| f as i64))
            .ok_or_else(|| format!("{what} must be an integer, found {value}")),
        _ => Err(format!("{what} must be an integer, found {value}")),
    }
}

fn string<'v>(value: &'v Value, what: &str) -> Result<&'v str, String> {
    value.as_str().ok_or_else(|| format!("{what} must be a string, found {value}"))
}

#[cfg(test)]
mod tests;
