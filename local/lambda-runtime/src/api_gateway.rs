//! The local HTTP API: what API Gateway does in front of the ingest
//! function. A request on one of the function's routes (its `HttpApi`
//! events in the template) becomes a payload 2.0 event
//! ([`crate::api_gateway_event`]), the function is invoked with it, and its
//! answer goes back as HTTP. What API Gateway answers itself, it answers
//! here too: `404 {"message":"Not Found"}` off the routes, `413` over its
//! 10 MB payload limit, `500` when the function fails, `503` when it times out.

use crate::api_gateway_event::{HttpAnswer, RequestFacts, gateway_error, http_answer, request_event};
use crate::function_error::kinds;
use crate::function_pool::FunctionPool;
use axum::Router;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::SystemTime;
use tokio::net::TcpListener;

/// API Gateway's limit on a request's payload.
pub const MAX_REQUEST_BYTES: usize = 10 * 1024 * 1024;

/// Serves the routes of `function` on `listener` until `stop` completes,
/// then finishes the requests in hand.
pub async fn serve_api_gateway(
    listener: TcpListener,
    function: Arc<FunctionPool>,
    stop: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = Router::new().fallback(handle).with_state(function);
    axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).with_graceful_shutdown(stop).await
}

async fn handle(
    State(function): State<Arc<FunctionPool>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
) -> Response {
    let request_id = uuid::Uuid::new_v4().to_string();
    let answer = answer(&function, peer, request, &request_id).await;
    let mut response = Response::new(axum::body::Body::from(answer.body));
    *response.status_mut() = answer.status;
    for (name, value) in answer.headers {
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            response.headers_mut().append(name, value);
        }
    }
    if let Ok(id) = HeaderValue::try_from(request_id) {
        response.headers_mut().insert("apigw-requestid", id);
    }
    response
}

async fn answer(function: &FunctionPool, peer: SocketAddr, request: Request, request_id: &str) -> HttpAnswer {
    let (parts, body) = request.into_parts();
    let routes = &function.spec().http_routes;
    let route = routes
        .iter()
        .find(|(method, path)| (method == "ANY" || method == parts.method.as_str()) && path == parts.uri.path());
    let Some((method, path)) = route else { return gateway_error(StatusCode::NOT_FOUND) };
    let Ok(body) = axum::body::to_bytes(body, MAX_REQUEST_BYTES).await else {
        return gateway_error(StatusCode::PAYLOAD_TOO_LARGE);
    };
    let facts = RequestFacts {
        route_key: format!("{method} {path}"),
        request_id: request_id.to_owned(),
        source_ip: peer.ip().to_string(),
        at: SystemTime::now(),
    };
    let event = request_event(&parts.method, &parts.uri, &parts.headers, &body, &facts);
    match function.invoke(event.to_string()).await {
        Ok(payload) => http_answer(&payload),
        Err(e) => {
            tracing::warn!(function = %function.spec().name, error = %e, "the HTTP API's function failed");
            gateway_error(match e.error_type.as_str() {
                kinds::TIMEOUT => StatusCode::SERVICE_UNAVAILABLE,
                _ => StatusCode::INTERNAL_SERVER_ERROR,
            })
        }
    }
}
