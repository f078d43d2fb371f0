//! A Slack-compatible incoming-webhook stand-in on 127.0.0.1 that keeps
//! every alert's text, for tests that give sluice an `--alert-url` and
//! count what it sends.
//!
//! Plain `std::net` and a thread per connection: the alerts are few, and a
//! test on any runtime (or none) can read them. Each POST is answered 200
//! and its body's `text` kept; anything it cannot read is kept as the raw
//! body, so a malformed alert shows in the test's counts rather than
//! vanishing.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The listener; stops accepting when dropped.
#[derive(Debug)]
pub struct AlertListener {
    url: String,
    alerts: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    port: u16,
}

impl AlertListener {
    /// Listens on a free port of 127.0.0.1.
    pub fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let port = listener.local_addr()?.port();
        let (alerts, stop) = (Arc::new(Mutex::new(Vec::new())), Arc::new(AtomicBool::new(false)));
        let (kept, stopping) = (alerts.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let kept = kept.clone();
                std::thread::spawn(move || serve(stream, &kept));
            }
        });
        Ok(Self { url: format!("http://127.0.0.1:{port}/alerts"), alerts, stop, port })
    }

    /// The URL to give sluice (`--alert-url`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Every alert's text so far, in arrival order.
    pub fn texts(&self) -> Vec<String> {
        self.alerts.lock().map(|a| a.clone()).unwrap_or_default()
    }

    /// How many alerts so far contain `needle`.
    pub fn count(&self, needle: &str) -> usize {
        self.texts().iter().filter(|t| t.contains(needle)).count()
    }
}

impl Drop for AlertListener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Serves one connection's requests (keep-alive) until it closes.
fn serve(stream: TcpStream, alerts: &Mutex<Vec<String>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let Ok(mut writer) = stream.try_clone() else { return };
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        // The request line, then headers up to the blank line.
        let mut first = true;
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let trimmed = line.trim_end();
            if trimmed.is_empty() && !first {
                break;
            }
            first = false;
            if let Some((name, value)) = trimmed.split_once(':')
                && name.trim().eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let text = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["text"].as_str().map(str::to_owned))
            .unwrap_or_else(|| String::from_utf8_lossy(&body).into_owned());
        if let Ok(mut kept) = alerts.lock() {
            kept.push(text);
        }
        if writer.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok").is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(port: u16, body: &str) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let request = format!(
            "POST /alerts HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = [0u8; 64];
        let n = stream.read(&mut answer).unwrap();
        String::from_utf8_lossy(&answer[..n]).into_owned()
    }

    #[test]
    fn keeps_each_alerts_text_and_answers_200() {
        let listener = AlertListener::start().unwrap();
        assert!(post(listener.port, r#"{"text":"mall `a` is parked"}"#).starts_with("HTTP/1.1 200"));
        assert!(post(listener.port, "not json").starts_with("HTTP/1.1 200"));
        assert_eq!(listener.texts(), ["mall `a` is parked", "not json"]);
        assert_eq!(listener.count("parked"), 1);
    }
}
