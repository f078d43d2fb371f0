//! Building the SDK clients (SQS, Step Functions). In AWS the SDK's default
//! chain supplies region and credentials. A local stand-in (an endpoint
//! override) needs neither, but the SDK signs every request, so when no
//! credentials are set the client signs with fixed placeholder ones, and
//! the region defaults to `us-east-1`. Nothing is read from instance
//! metadata in that case, so a local client starts at once on a machine
//! without AWS access.
//!
//! Every client here speaks HTTPS through rustls on *ring*, the crypto
//! provider the rest of the workspace uses too (reqwest, redis): the SDK's
//! default (aws-lc-rs) would add a C library whose build alone took 77 s of
//! the release build that `make run` starts with.

use aws_config::SdkConfig;
use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region, SharedCredentialsProvider, SharedHttpClient};
use aws_smithy_http_client::tls::{Provider, rustls_provider::CryptoMode};

/// Where an AWS service is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ServiceEndpoint {
    /// AWS itself, as configured by the environment (region, credentials).
    #[default]
    Aws,
    /// A local stand-in at this URL, e.g. `http://127.0.0.1:9324`.
    Local(String),
}

/// Where SQS is.
pub type SqsEndpoint = ServiceEndpoint;
/// Where Step Functions is.
pub type SfnEndpoint = ServiceEndpoint;

/// Region for local endpoints when `AWS_REGION` is unset.
pub const LOCAL_REGION: &str = "us-east-1";

/// An SQS client for `endpoint`.
pub async fn sqs_client(endpoint: &SqsEndpoint) -> aws_sdk_sqs::Client {
    match endpoint {
        ServiceEndpoint::Aws => aws_sdk_sqs::Client::new(&aws_defaults().await),
        ServiceEndpoint::Local(url) => aws_sdk_sqs::Client::new(&local_config(url)),
    }
}

/// A Step Functions client for `endpoint` (feature `sfn`). A local one
/// sends every call to the endpoint as given: the SDK would send
/// StartSyncExecution to `sync-<host>` (the operation's host prefix), a
/// name that only exists in AWS (`host_prefix`).
#[cfg(feature = "sfn")]
pub async fn sfn_client(endpoint: &SfnEndpoint) -> aws_sdk_sfn::Client {
    match endpoint {
        ServiceEndpoint::Aws => aws_sdk_sfn::Client::new(&aws_defaults().await),
        ServiceEndpoint::Local(url) => {
            let config = aws_sdk_sfn::config::Builder::from(&local_config(url))
                .interceptor(crate::host_prefix::KeepEndpointHost::new(url))
                .build();
            aws_sdk_sfn::Client::from_conf(config)
        }
    }
}

/// What a client of a local endpoint at `url` is built from: the region
/// and credentials of the environment when set, placeholders otherwise,
/// and this crate's HTTP client.
fn local_config(url: &str) -> SdkConfig {
    let region = std::env::var("AWS_REGION").unwrap_or_else(|_| LOCAL_REGION.to_owned());
    let credentials = match (std::env::var("AWS_ACCESS_KEY_ID"), std::env::var("AWS_SECRET_ACCESS_KEY")) {
        (Ok(id), Ok(secret)) => Credentials::new(id, secret, std::env::var("AWS_SESSION_TOKEN").ok(), None, "env"),
        _ => Credentials::new("sluice-local", "sluice-local", None, None, "sluice-local"),
    };
    SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(region))
        .endpoint_url(url)
        .credentials_provider(SharedCredentialsProvider::new(credentials))
        .http_client(https_client())
        .build()
}

/// The SDK's default chain (region, credentials, endpoint override), with
/// this crate's HTTP client.
pub(crate) async fn aws_defaults() -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest()).http_client(https_client()).load().await
}

/// The HTTP client every SDK client here uses: hyper with rustls on ring.
pub(crate) fn https_client() -> SharedHttpClient {
    aws_smithy_http_client::Builder::new().tls_provider(Provider::Rustls(CryptoMode::Ring)).build_https()
}
