//! Clients pointed at the sandbox upstreams, as every test that calls them
//! builds them.

use sluice_cafe24::{BaseUrlTemplate, Cafe24Client, Cafe24Config, TokenGrant};
use sluice_sandbox::{Cafe24Sandbox, Cafe24SandboxConfig, SheetsSandbox};
use sluice_sheets::{Secret, SheetsConfig};

/// Settings of a Cafe24 client that calls `sandbox` as the app the sandbox
/// knows by default (`Cafe24SandboxConfig::default()`'s id and secret).
pub fn cafe24_config(sandbox: &Cafe24Sandbox) -> Cafe24Config {
    let app = Cafe24SandboxConfig::default();
    let base_url = BaseUrlTemplate::new(sandbox.base_url_template()).expect("the sandbox's URL template is usable");
    Cafe24Config::new(app.client_id, app.client_secret).with_base_url(base_url)
}

/// A client built from [`cafe24_config`].
pub fn cafe24_client(sandbox: &Cafe24Sandbox) -> Cafe24Client {
    Cafe24Client::new(cafe24_config(sandbox)).expect("the client builds")
}

/// A token pair the sandbox issues for `mall`, as the client would read it
/// from the token endpoint.
pub fn grant(sandbox: &Cafe24Sandbox, mall: &str) -> TokenGrant {
    TokenGrant::from_response(sandbox.issue_tokens(mall).expect("the sandbox knows the mall")).expect("a usable grant")
}

/// Settings of a Sheets client that calls `sandbox`'s API and token
/// endpoint as OAuth client `client_id`.
pub fn sheets_config(sandbox: &SheetsSandbox, client_id: &str, client_secret: &str) -> SheetsConfig {
    SheetsConfig::new(client_id, Secret::new(client_secret))
        .with_api_base_url(sandbox.base_url())
        .and_then(|c| c.with_token_url(sandbox.token_url()))
        .expect("the sandbox's URLs are usable")
}
