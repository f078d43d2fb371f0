//! Building an SQS client. In AWS the SDK's default chain supplies region
//! and credentials. A local stand-in (an endpoint override) needs neither,
//! but the SDK signs every request, so when no credentials are set the
//! client signs with fixed placeholder ones, and the region defaults to
//! `us-east-1`. Nothing is read from instance metadata in that case, so a
//! local client starts at once on a machine without AWS access.

use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};

/// Where SQS is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SqsEndpoint {
    /// AWS itself, as configured by the environment (region, credentials).
    #[default]
    Aws,
    /// A local stand-in at this URL, e.g. `http://127.0.0.1:9324`.
    Local(String),
}

/// Region for local endpoints when `AWS_REGION` is unset.
pub const LOCAL_REGION: &str = "us-east-1";

/// An SQS client for `endpoint`.
pub async fn sqs_client(endpoint: &SqsEndpoint) -> aws_sdk_sqs::Client {
    match endpoint {
        SqsEndpoint::Aws => aws_sdk_sqs::Client::new(&aws_config::load_defaults(BehaviorVersion::latest()).await),
        SqsEndpoint::Local(url) => {
            let region = std::env::var("AWS_REGION").unwrap_or_else(|_| LOCAL_REGION.to_owned());
            let credentials = match (std::env::var("AWS_ACCESS_KEY_ID"), std::env::var("AWS_SECRET_ACCESS_KEY")) {
                (Ok(id), Ok(secret)) => {
                    Credentials::new(id, secret, std::env::var("AWS_SESSION_TOKEN").ok(), None, "env")
                }
                _ => Credentials::new("sluice-local", "sluice-local", None, None, "sluice-local"),
            };
            let config = aws_sdk_sqs::Config::builder()
                .behavior_version(BehaviorVersion::latest())
                .region(Region::new(region))
                .endpoint_url(url)
                .credentials_provider(credentials)
                .build();
            aws_sdk_sqs::Client::from_conf(config)
        }
    }
}
