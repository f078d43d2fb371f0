//! `sluice sandbox cafe24` as a user runs it: bad flags exit 2 before
//! anything listens; a good run prints its URLs, serves the control plane
//! and the per-mall API, and stops on Ctrl-C (SIGINT) with a summary.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(30);

fn sluice(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sluice"));
    command.args(["sandbox", "cafe24"]).args(args);
    command
}

/// A plain HTTP/1.0 exchange; returns the status line and the body.
fn http(base: &str, method: &str, path: &str) -> (String, String) {
    let addr = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    write!(stream, "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Length: 0\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (head.lines().next().unwrap_or_default().to_owned(), body.to_owned())
}

fn wait(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        assert!(Instant::now() < deadline, "sluice sandbox cafe24 did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn bad_flags_exit_2_with_a_message_naming_the_flag() {
    for (args, names) in [
        (&["--error-rate", "1.5"][..], "--error-rate"),
        (&["--error-rate", "0.6", "--timeout-rate", "0.6"][..], "--timeout-rate"),
        (&["--webhook-target", "http://127.0.0.1:1/h"][..], "--api-key"),
        (&["--mall", "bad mall"][..], "bad mall"),
        (&["--bucket-capacity", "0"][..], "--bucket-capacity"),
    ] {
        let output = sluice(args).output().expect("run sluice");
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(names), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "nothing should have started: {args:?}");
    }
}

#[test]
fn serves_until_ctrl_c() {
    let mut child = sluice(&["--port", "0", "--mall", "acme,shop2", "--bucket-capacity", "7"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start sluice sandbox cafe24");
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut seen = Vec::new();
    while !seen.iter().any(|l: &String| l.starts_with("Ready.")) {
        match lines.recv_timeout(TIMEOUT) {
            Ok(line) => seen.push(line),
            Err(_) => panic!("no Ready line; printed {seen:?}"),
        }
    }
    let base = seen.iter().find_map(|l| l.strip_prefix("Cafe24 sandbox: ")).expect("the sandbox URL").to_owned();
    assert!(seen.contains(&format!("Mall acme: {base}/malls/acme")), "{seen:?}");
    assert!(seen.contains(&format!("Mall shop2: {base}/malls/shop2")), "{seen:?}");

    let (status, body) = http(&base, "GET", "/sandbox/malls");
    assert!(status.contains("200"), "{status}");
    assert!(body.contains("\"mall_id\":\"shop2\"") && body.contains("\"capacity\":7"), "{body}");
    let (status, body) = http(&base, "GET", "/malls/acme/api/v2/admin/products/1");
    assert!(status.contains("401"), "{status}");
    assert!(body.contains("\"code\":401"), "{body}");

    let kill = Command::new("kill").args(["-INT", &child.id().to_string()]).status().expect("kill");
    assert!(kill.success());
    assert!(wait(&mut child).success());
    let summary =
        std::iter::from_fn(|| lines.recv_timeout(TIMEOUT).ok()).find(|l| l.starts_with("Cafe24 sandbox stopped"));
    assert!(summary.is_some_and(|s| s.contains("1 calls")), "no summary after Ctrl-C");
}
