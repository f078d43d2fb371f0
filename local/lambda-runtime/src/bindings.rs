//! What the local stack puts where the template names something of AWS:
//! parameter values (over the template's defaults), resources (a queue's
//! URL for `!Ref EventsQueue`, an ARN for `!GetAtt FlushQueue.Arn`), the
//! secrets (each served by the local Secrets Manager under an ARN of its
//! own), the few variables whose template value only makes sense in AWS
//! (the ElastiCache URL, the key prefix), and the local endpoints of the
//! services the template leaves at their AWS defaults (SQS, Secrets
//! Manager, Cafe24, Google).

use sluice_domain::Secret;
use std::collections::BTreeMap;

/// The account every local ARN is in, as the local SQS endpoint's URLs say.
pub const LOCAL_ACCOUNT: &str = "000000000000";
/// The region of the local stack unless told otherwise.
pub const LOCAL_REGION: &str = "us-east-1";

/// Local endpoints of services the template reaches at their AWS defaults.
/// Each goes only to the functions that use that service (see
/// [`crate::function_spec`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Endpoints {
    /// `SLUICE_SQS_ENDPOINT`: to functions given a queue URL.
    pub sqs: Option<String>,
    /// `SLUICE_CAFE24_BASE_URL`: to functions given the Cafe24 app.
    pub cafe24_base_url: Option<String>,
    /// `SLUICE_SHEETS_API_URL` and `SLUICE_GOOGLE_TOKEN_URL`: to functions given the Google client.
    pub sheets_api_url: Option<String>,
    pub google_token_url: Option<String>,
    /// `AWS_ENDPOINT_URL_SECRETS_MANAGER`: to functions given a secret's ARN
    /// (set by [`crate::LocalLambda`], which serves them).
    pub secrets_manager: Option<String>,
    /// `SLUICE_REDIS_CA_FILE`: to functions given the Redis URL, when the
    /// local Redis's certificate is signed by a private CA. ElastiCache's
    /// is signed by a public one, so the template sets none.
    pub redis_ca_file: Option<String>,
}

/// The template's secrets that hold a cache user's password: the shared
/// user's and ingest's own.
pub const CACHE_PASSWORDS: [&str; 2] = ["CachePassword", "CacheIngestPassword"];

/// One secret the local Secrets Manager serves.
#[derive(Debug, Clone)]
pub struct LocalSecret {
    /// The template resource (`ApiKeys`).
    pub logical_id: String,
    pub arn: String,
    pub value: Secret,
}

/// See the module docs.
#[derive(Debug, Clone)]
pub struct Bindings {
    pub region: String,
    pub(crate) parameters: BTreeMap<String, String>,
    pub(crate) resources: BTreeMap<String, String>,
    replaced: BTreeMap<String, String>,
    secrets: Vec<LocalSecret>,
    pub endpoints: Endpoints,
}

impl Default for Bindings {
    fn default() -> Self {
        Self::new()
    }
}

impl Bindings {
    pub fn new() -> Self {
        Self {
            region: LOCAL_REGION.to_owned(),
            parameters: BTreeMap::new(),
            resources: BTreeMap::new(),
            replaced: BTreeMap::new(),
            secrets: Vec::new(),
            endpoints: Endpoints::default(),
        }
    }

    /// The parameter `name` is `value` (in place of its default).
    pub fn parameter(mut self, name: &str, value: impl ToString) -> Self {
        self.parameters.insert(name.to_owned(), value.to_string());
        self
    }

    /// `!Ref name` (or `!GetAtt name`, given as `Resource.Attribute`) is `value`.
    pub fn resource(mut self, name: &str, value: impl Into<String>) -> Self {
        self.resources.insert(name.to_owned(), value.into());
        self
    }

    /// The secret resource `logical_id` holds `value`: `!Ref logical_id`
    /// becomes a local ARN, which the local Secrets Manager answers.
    pub fn secret(mut self, logical_id: &str, value: Secret) -> Self {
        let arn =
            format!("arn:aws:secretsmanager:{}:{LOCAL_ACCOUNT}:secret:sluice-local/{logical_id}-Local0", self.region);
        self.resources.insert(logical_id.to_owned(), arn.clone());
        self.secrets.retain(|s| s.logical_id != logical_id);
        self.secrets.push(LocalSecret { logical_id: logical_id.to_owned(), arn, value });
        self
    }

    /// The variable `name`, which the template sets to something that
    /// exists only in AWS, is `value` here instead. It must be a variable
    /// the template sets ([`crate::function_spec::specs`] checks).
    pub fn replace(mut self, name: &str, value: impl Into<String>) -> Self {
        self.replaced.insert(name.to_owned(), value.into());
        self
    }

    /// The template's Redis is the one at `url`: `SLUICE_REDIS_URL` is
    /// `url` with its user but without its password, which the
    /// `CachePassword` secret holds, as ElastiCache's user and password
    /// reach the functions. A URL without a user or password gets the
    /// `default` user and a made-up password: a Redis without a password
    /// accepts any for its `default` user (`nopass`), so the functions still
    /// read the secret and authenticate as they do in AWS. The template says
    /// cluster mode `on` because ElastiCache Serverless always is; the local
    /// Redis may be a single server or a cluster, so the functions ask it
    /// (`auto`). The local Redis has one user, so every function reaches it
    /// as that user, ingest too: the secret of ingest's own cache user
    /// (`CacheIngestPassword`) holds the same credentials. What the ingest
    /// user may touch is tested on a Redis of its own
    /// (`functions/ingest/tests/cache_user.rs`).
    pub fn redis(self, url: &str) -> Self {
        let (url, user, password) = split_password(url);
        let secret = serde_json::json!({"username": user, "password": password});
        let bindings = self.replace("SLUICE_REDIS_URL", url).replace("SLUICE_REDIS_CLUSTER", "auto");
        CACHE_PASSWORDS.iter().fold(bindings, |b, id| b.secret(id, Secret::new(secret.to_string())))
    }

    pub fn with_endpoints(mut self, endpoints: Endpoints) -> Self {
        self.endpoints = endpoints;
        self
    }

    pub fn secrets(&self) -> &[LocalSecret] {
        &self.secrets
    }

    pub(crate) fn replaced(&self) -> &BTreeMap<String, String> {
        &self.replaced
    }

    /// A pseudo parameter (`AWS::Region`, …) as the local stack answers it.
    pub(crate) fn pseudo(&self, name: &str) -> Option<String> {
        Some(match name {
            "AWS::Region" => self.region.clone(),
            "AWS::AccountId" => LOCAL_ACCOUNT.to_owned(),
            "AWS::Partition" => "aws".to_owned(),
            "AWS::URLSuffix" => "amazonaws.com".to_owned(),
            "AWS::StackName" => "sluice-local".to_owned(),
            _ => return None,
        })
    }

    /// The ARN of the local function `name`.
    pub fn function_arn(&self, name: &str) -> String {
        format!("arn:aws:lambda:{}:{LOCAL_ACCOUNT}:function:{name}", self.region)
    }

    /// The ARN of the local queue `name`, as the local SQS endpoint names it.
    pub fn queue_arn(&self, name: &str) -> String {
        format!("arn:aws:sqs:{}:{LOCAL_ACCOUNT}:{name}", self.region)
    }
}

/// `scheme://user:password@host…` → (`scheme://user@host…`, user, password);
/// a missing user is `default`, a missing password made up.
fn split_password(url: &str) -> (String, String, String) {
    let made_up = || format!("local-{}", uuid::Uuid::new_v4().simple());
    let Some((scheme, rest)) = url.split_once("://") else { return (url.to_owned(), "default".into(), made_up()) };
    let (auth, host) = rest.rsplit_once('@').unwrap_or(("", rest));
    let (user, password) = auth.split_once(':').unwrap_or((auth, ""));
    let user = if user.is_empty() { "default" } else { user };
    let decode = |s: &str| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned();
    let password = if password.is_empty() { made_up() } else { decode(password) };
    (format!("{scheme}://{user}@{host}"), decode(user), password)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redis_url_gives_its_password_to_the_secret() {
        let (url, user, password) = split_password("rediss://sluice:p%40ss@cache:6379/0");
        assert_eq!(
            (url.as_str(), user.as_str(), password.as_str()),
            ("rediss://sluice@cache:6379/0", "sluice", "p@ss")
        );
        let (url, user, password) = split_password("redis://:pw@127.0.0.1:7000");
        assert_eq!(
            (url.as_str(), user.as_str(), password.as_str()),
            ("redis://default@127.0.0.1:7000", "default", "pw")
        );
        let (url, user, password) = split_password("redis://127.0.0.1:7000");
        assert_eq!((url.as_str(), user.as_str()), ("redis://default@127.0.0.1:7000", "default"));
        assert!(password.starts_with("local-"));
        let bindings = Bindings::new().redis("redis://u:pw@h:1");
        assert_eq!(bindings.secrets().len(), CACHE_PASSWORDS.len());
        for secret in bindings.secrets() {
            let value: serde_json::Value = serde_json::from_str(secret.value.expose()).unwrap();
            assert_eq!(value, serde_json::json!({"username": "u", "password": "pw"}), "{}", secret.logical_id);
        }
        assert_eq!(bindings.replaced()["SLUICE_REDIS_URL"], "redis://u@h:1");
    }
}
