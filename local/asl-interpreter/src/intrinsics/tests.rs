//! Each function on the examples of the AWS intrinsic functions page, plus
//! the argument rules.

use super::Intrinsic;
use crate::context_object::{ContextObject, ExecutionInfo};
use serde_json::{Value, json};
use std::time::SystemTime;

fn eval(call: &str, input: Value) -> Result<Value, crate::failure::Failure> {
    let execution = ExecutionInfo {
        id: "id".into(),
        name: "name".into(),
        input: Value::Null,
        start_time: SystemTime::UNIX_EPOCH,
        state_machine_id: "sm".into(),
        state_machine_name: "sm".into(),
    };
    let context = ContextObject::new(&execution, "State", SystemTime::UNIX_EPOCH);
    Intrinsic::parse(call).expect("parses").evaluate(&input, &context)
}

fn ok(call: &str, input: Value) -> Value {
    eval(call, input).unwrap_or_else(|f| panic!("{call}: {f}"))
}

fn intrinsic_failure(call: &str, input: Value) -> String {
    let failure = eval(call, input).expect_err(call);
    assert_eq!(failure.error, "States.IntrinsicFailure", "{call}: {failure}");
    failure.cause.unwrap_or_default()
}

#[test]
fn format_fills_placeholders_and_honours_escapes() {
    let input = json!({"name": "Arnav", "template": "Hello, my name is {}."});
    assert_eq!(ok("States.Format('Hello, my name is {}.', $.name)", input.clone()), json!("Hello, my name is Arnav."));
    assert_eq!(ok("States.Format($.template, $.name)", input.clone()), json!("Hello, my name is Arnav."));
    assert_eq!(ok(r"States.Format('\{\} {} it\'s', 2020)", input.clone()), json!("{} 2020 it's"));
    assert_eq!(ok("States.Format('{} {} {}', true, null, 1.5)", input.clone()), json!("true null 1.5"));
    assert!(intrinsic_failure("States.Format('{}', $)", input).contains("string, number, boolean or null"));
    assert!(Intrinsic::parse("States.Format('{} {}', 1)").unwrap_err().contains("placeholder"));
}

#[test]
fn json_text_round_trips() {
    let input = json!({"escapedJsonString": "{\"foo\": \"bar\"}", "unescapedJson": {"foo": "bar"}});
    assert_eq!(ok("States.StringToJson($.escapedJsonString)", input.clone()), json!({"foo": "bar"}));
    assert_eq!(ok("States.JsonToString($.unescapedJson)", input.clone()), json!("{\"foo\":\"bar\"}"));
    assert!(Intrinsic::parse("States.JsonToString('x')").unwrap_err().contains("must be a Path"));
    assert!(intrinsic_failure("States.StringToJson('{nope')", input).contains("not JSON"));
}

#[test]
fn array_functions() {
    let input = json!({"inputArray": [1, 2, 3, 4, 5, 6, 7, 8, 9], "lookingFor": 5, "index": 5, "dups": [1, 2, 3, 3, 3, 3, 3, 3, 4]});
    assert_eq!(ok("States.Array('Foo', 2020, $.lookingFor, null)", input.clone()), json!(["Foo", 2020, 5, null]));
    assert_eq!(ok("States.ArrayPartition($.inputArray, 4)", input.clone()), json!([[1, 2, 3, 4], [5, 6, 7, 8], [9]]));
    assert_eq!(ok("States.ArrayContains($.inputArray, $.lookingFor)", input.clone()), json!(true));
    assert_eq!(ok("States.ArrayRange(1, 9, 2)", input.clone()), json!([1, 3, 5, 7, 9]));
    assert_eq!(ok("States.ArrayRange(5, 1, -2)", input.clone()), json!([5, 3, 1]));
    assert_eq!(ok("States.ArrayGetItem($.inputArray, $.index)", input.clone()), json!(6));
    assert_eq!(ok("States.ArrayLength($.inputArray)", input.clone()), json!(9));
    assert_eq!(ok("States.ArrayUnique($.dups)", input.clone()), json!([1, 2, 3, 4]));
    assert!(intrinsic_failure("States.ArrayPartition($.inputArray, 0)", input.clone()).contains("positive"));
    assert!(intrinsic_failure("States.ArrayRange(1, 9, 0)", input.clone()).contains("0"));
    assert!(intrinsic_failure("States.ArrayRange(0, 5000, 1)", input.clone()).contains("1000"));
    assert!(intrinsic_failure("States.ArrayGetItem($.inputArray, 9)", input.clone()).contains("out of bounds"));
    assert!(intrinsic_failure("States.ArrayLength($.lookingFor)", input).contains("must be an array"));
}

#[test]
fn encoding_and_hashing() {
    let input = json!({"input": "Data to encode", "base64": "RGF0YSB0byBlbmNvZGU=", "Data": "input data"});
    assert_eq!(ok("States.Base64Encode($.input)", input.clone()), json!("RGF0YSB0byBlbmNvZGU="));
    assert_eq!(ok("States.Base64Decode($.base64)", input.clone()), json!("Data to encode"));
    // The AWS page shows this digest with one "4" missing; this is what
    // `printf "input data" | sha1sum` prints.
    assert_eq!(ok("States.Hash($.Data, 'SHA-1')", input.clone()), json!("aaff4a450a104cd177d28d18d74485e8cae074b7"));
    assert_eq!(ok("States.Hash($.Data, 'MD5')", input.clone()), json!(md5_hex("input data")));
    for algorithm in ["SHA-256", "SHA-384", "SHA-512"] {
        let digest = ok(&format!("States.Hash($.Data, '{algorithm}')"), input.clone());
        let bits: usize = algorithm[4..].parse().unwrap();
        assert_eq!(digest.as_str().unwrap().len(), bits / 4, "{algorithm}");
    }
    assert!(Intrinsic::parse("States.Hash($.Data, 'SHA-2')").unwrap_err().contains("not a hash algorithm"));
    assert!(intrinsic_failure("States.Base64Decode('***')", input).contains("Base64"));
}

fn md5_hex(text: &str) -> String {
    use md5::Digest;
    hex::encode(md5::Md5::digest(text.as_bytes()))
}

#[test]
fn merge_math_split_uuid() {
    let input = json!({
        "json1": {"a": {"a1": 1, "a2": 2}, "b": 2},
        "json2": {"a": {"a3": 1, "a4": 2}, "c": 3},
        "value1": 111, "step": -1, "inputString": "1,2,3,4,5", "splitter": ","
    });
    assert_eq!(
        ok("States.JsonMerge($.json1, $.json2, false)", input.clone()),
        json!({"a": {"a3": 1, "a4": 2}, "b": 2, "c": 3})
    );
    assert!(Intrinsic::parse("States.JsonMerge($.json1, $.json2, true)").unwrap_err().contains("shallow"));
    assert_eq!(ok("States.MathAdd($.value1, $.step)", input.clone()), json!(110));
    assert!(intrinsic_failure("States.MathAdd(1.5, 1)", input.clone()).contains("integer"));
    let seeded = ok("States.MathRandom(1, 999, 42)", input.clone());
    assert_eq!(ok("States.MathRandom(1, 999, 42)", input.clone()), seeded, "the same seed gives the same number");
    let n = seeded.as_i64().unwrap();
    assert!((1..999).contains(&n));
    assert_eq!(ok("States.StringSplit($.inputString, $.splitter)", input.clone()), json!(["1", "2", "3", "4", "5"]));
    assert_eq!(
        ok("States.StringSplit('This.is+a,test=string', '.+,=')", input.clone()),
        json!(["This", "is", "a", "test", "string"])
    );
    let uuid = ok("States.UUID()", input.clone());
    let uuid = uuid.as_str().unwrap();
    assert_eq!((uuid.len(), &uuid[14..15]), (36, "4"), "{uuid} is a version 4 UUID");
    assert_ne!(ok("States.UUID()", input), json!(uuid));
}

#[test]
fn nesting_and_syntax_errors() {
    let input = json!({"arn": "arn:aws:imagebuilder:us-east-1:123456789012:image-recipe/sample-recipe/1.0.0"});
    let nested =
        "States.ArrayGetItem(States.StringSplit(States.ArrayGetItem(States.StringSplit($.arn, '/'), 2), '.'), 0)";
    assert_eq!(ok(nested, input.clone()), json!("1"));
    assert!(Intrinsic::parse("States.Nope(1)").unwrap_err().contains("unknown intrinsic"));
    assert!(Intrinsic::parse("States.ArrayLength()").unwrap_err().contains("takes 1"));
    assert!(Intrinsic::parse("States.Format('a)").unwrap_err().contains("unclosed"));
    assert!(Intrinsic::parse(r"States.Format('a\q')").unwrap_err().contains("escape"));
    let missing = eval("States.ArrayLength($.missing)", input).unwrap_err();
    assert_eq!(missing.error, "States.Runtime");
}
