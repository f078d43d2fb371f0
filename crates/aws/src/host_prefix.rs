//! Keeping a local endpoint's host. Some operations carry a host prefix in
//! their service model (Step Functions' StartSyncExecution: `sync-`), and
//! the SDK prepends it to any endpoint, an override included: a call meant
//! for `http://127.0.0.1:8083` goes to `http://sync-127.0.0.1:8083`, which
//! does not resolve (aws-sdk-js-v3 issue 7146; botocore has
//! `AWS_DISABLE_HOST_PREFIX_INJECTION` for it, the Rust SDK nothing). This
//! interceptor puts the endpoint's own scheme and authority back before the
//! request is signed, keeping its path and query.

use aws_sdk_sfn::config::interceptors::BeforeTransmitInterceptorContextMut;
use aws_sdk_sfn::config::{ConfigBag, Intercept, RuntimeComponents};

/// Sends every request to the scheme and authority of one endpoint.
#[derive(Debug, Clone)]
pub(crate) struct KeepEndpointHost {
    /// `scheme://authority` of the endpoint, without its path.
    origin: String,
}

impl KeepEndpointHost {
    pub(crate) fn new(endpoint: &str) -> Self {
        Self { origin: origin(endpoint).to_owned() }
    }
}

/// `scheme://authority` of `url` (all of it when it has no scheme: the
/// SDK then refuses the endpoint itself, with its own message).
fn origin(url: &str) -> &str {
    let Some((scheme, rest)) = url.split_once("://") else { return url };
    let authority = rest.split(['/', '?']).next().unwrap_or(rest);
    &url[..scheme.len() + 3 + authority.len()]
}

impl Intercept for KeepEndpointHost {
    fn name(&self) -> &'static str {
        "KeepEndpointHost"
    }

    fn modify_before_signing(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let uri = context.request_mut().uri_mut();
        uri.set_endpoint(&self.origin)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::origin;

    #[test]
    fn the_origin_is_scheme_and_authority() {
        assert_eq!(origin("http://127.0.0.1:8083"), "http://127.0.0.1:8083");
        assert_eq!(origin("http://127.0.0.1:8083/"), "http://127.0.0.1:8083");
        assert_eq!(origin("https://states.local/base?x=1"), "https://states.local");
        assert_eq!(origin("not a url"), "not a url");
    }
}
