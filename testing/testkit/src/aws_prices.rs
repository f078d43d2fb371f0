//! The AWS prices the benchmarks' cost tables (bench/cost.md,
//! bench/cost-sheets.md) use, all in one place: us-east-1, on
//! demand, the first pricing tier, no free tier. Read on 2026-11-25 from
//! the pages named beside each (the ElastiCache Serverless Valkey rates
//! from a third-party summary quoting AWS: check them against
//! aws.amazon.com/elasticache/pricing/ before relying on them). Prices
//! change: update this file and rerun `make bench`.

/// A price: USD per unit, and where it was read.
#[derive(Debug, Clone, Copy)]
pub struct Price {
    pub usd: f64,
    pub unit: &'static str,
    pub source: &'static str,
}

const fn price(usd: f64, unit: &'static str, source: &'static str) -> Price {
    Price { usd, unit, source }
}

pub const HTTP_API_REQUEST: Price =
    price(1.00 / 1e6, "per request (first 300 M a month)", "aws.amazon.com/api-gateway/pricing/");
pub const LAMBDA_REQUEST: Price = price(0.20 / 1e6, "per invocation", "aws.amazon.com/lambda/pricing/");
pub const LAMBDA_ARM_GB_SECOND: Price =
    price(0.000_013_333_4, "per GB-second, arm64", "aws.amazon.com/lambda/pricing/");
pub const SQS_FIFO_REQUEST: Price = price(0.50 / 1e6, "per FIFO request (64 KB chunk)", "aws.amazon.com/sqs/pricing/");
pub const SQS_STANDARD_REQUEST: Price =
    price(0.40 / 1e6, "per standard request (64 KB chunk)", "aws.amazon.com/sqs/pricing/");
pub const PIPES_REQUEST: Price =
    price(0.40 / 1e6, "per Pipes request (64 KB chunk of a batch)", "aws.amazon.com/eventbridge/pricing/");
pub const EXPRESS_REQUEST: Price = price(1.00 / 1e6, "per Express execution", "aws.amazon.com/step-functions/pricing/");
pub const EXPRESS_GB_SECOND: Price = price(
    0.000_016_67,
    "per GB-second (duration rounded up to 100 ms, memory in 64 MB chunks)",
    "aws.amazon.com/step-functions/pricing/",
);
pub const VALKEY_SERVERLESS_ECPU: Price =
    price(0.0023 / 1e6, "per ECPU (1 per KB moved by a simple command)", "aws.amazon.com/elasticache/pricing/");
pub const VALKEY_SERVERLESS_GB_HOUR: Price =
    price(0.084, "per GB-hour stored (at least 100 MB)", "aws.amazon.com/elasticache/pricing/");
pub const LOGS_INGESTED_GB: Price = price(0.50, "per GB ingested", "aws.amazon.com/cloudwatch/pricing/");
pub const NAT_HOUR: Price = price(0.045, "per NAT gateway hour", "aws.amazon.com/vpc/pricing/");
pub const NAT_GB: Price = price(0.045, "per GB through a NAT gateway", "aws.amazon.com/vpc/pricing/");

pub const ALL: &[(&str, &Price)] = &[
    ("API Gateway HTTP API", &HTTP_API_REQUEST),
    ("Lambda requests", &LAMBDA_REQUEST),
    ("Lambda duration", &LAMBDA_ARM_GB_SECOND),
    ("SQS FIFO", &SQS_FIFO_REQUEST),
    ("SQS standard", &SQS_STANDARD_REQUEST),
    ("EventBridge Pipes", &PIPES_REQUEST),
    ("Step Functions Express requests", &EXPRESS_REQUEST),
    ("Step Functions Express duration", &EXPRESS_GB_SECOND),
    ("ElastiCache Serverless (Valkey) ECPUs", &VALKEY_SERVERLESS_ECPU),
    ("ElastiCache Serverless (Valkey) storage", &VALKEY_SERVERLESS_GB_HOUR),
    ("CloudWatch Logs", &LOGS_INGESTED_GB),
    ("NAT gateway", &NAT_HOUR),
    ("NAT gateway data", &NAT_GB),
];

/// What the cost tables assume rather than measure, shared by the shop's
/// and the sheet's so their months compare.
pub mod assumed {
    /// Ingest's billed time per webhook: its Redis round trips (under 1 ms
    /// each to ElastiCache in one region) and one SQS send (about 10 ms).
    pub const INGEST_MS: f64 = 15.0;
    /// A step Lambda's billed time when it waits only on a round trip or
    /// two to ElastiCache (not on an upstream API).
    pub const REDIS_STEP_MS: f64 = 10.0;
    /// The template's memory for every function (infra/template.yaml Globals).
    pub const FUNCTION_GB: f64 = 0.25;
    /// An Express execution's memory: one 64 MB chunk (a batch of 10 small items).
    pub const EXPRESS_GB: f64 = 0.0625;
    /// Log bytes per Lambda invocation: START, END and REPORT lines and one
    /// EMF metrics line.
    pub const LOG_BYTES_PER_INVOCATION: f64 = 700.0;
}
