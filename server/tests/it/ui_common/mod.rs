//! The browser harness of the UI tests: a real `magrathea serve` child on 127.0.0.1, a
//! `chromedriver` on a free port, and headless Chromium driven over WebDriver (fantoccini).
//!
//! Chromium and chromedriver come from Debian's `chromium` and `chromium-driver` packages
//! (`.ci/run` installs them); `MAGRATHEA_CHROMIUM` and `MAGRATHEA_CHROMEDRIVER` name other
//! binaries. chromedriver runs in a process group of its own, and dropping [`Ui`] kills that
//! group (chromedriver and every browser process it started) and the server.
//!
//! Waits poll the page until a condition holds, up to [`WAIT`]; nothing asserts how long
//! anything took.

#![allow(dead_code, unreachable_pub)]

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};

use crate::serve_child::ServeChild;

/// How long a wait polls before it fails the test (generous: CI machines are slow).
pub const WAIT: Duration = Duration::from_secs(60);

/// A workflow whose only step fails: its run ends FAILED.
pub const FAILS: &str = r#"
start: boom
states:
  boom:
    type: shell_task
    run: 'echo about to fail >&2; exit 3'
    dirName: workspace
    on:
      success: done
  done: { type: terminal, result: never }
"#;

/// Calls `hello` as a sub-run, then waits at a gate.
pub const PARENT: &str = r#"
start: call
states:
  call:
    type: workflow_task
    workflow: hello
    on: { success: review }
  review:
    type: gate_task
    inbox: { kind: APPROVAL, title: "Ok?" }
    on: { approved: done }
    catch: { human_rejected: done }
  done: { type: terminal }
"#;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A chromedriver process group, killed on drop.
struct Driver {
    child: Child,
    url: String,
}

impl Driver {
    /// Starts chromedriver with `tmp` as the temporary directory of it and its browsers:
    /// Chromium keeps its shared memory files there (`--disable-dev-shm-usage`), which a
    /// SIGKILL leaves behind.
    fn start(tmp: &Path) -> Self {
        let bin = std::env::var("MAGRATHEA_CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".into());
        let port = free_port();
        let child = Command::new(&bin)
            .arg(format!("--port={port}"))
            .env("TMPDIR", tmp)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start {bin} (install Debian's chromium-driver): {e}")
            });
        let driver = Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        // Ready when it accepts connections.
        let deadline = Instant::now() + WAIT;
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver never listened");
            std::thread::sleep(Duration::from_millis(50));
        }
        driver
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // The whole group: chromedriver and the browsers it launched.
        let pgid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// A served document tree, a browser on it, and the HTTP client of the API calls the tests
/// make beside the browser.
pub struct Ui {
    /// The browser session.
    pub c: Client,
    /// The server.
    pub server: ServeChild,
    /// The API client of the test itself.
    pub http: reqwest::Client,
    /// The document root.
    pub root: PathBuf,
    _driver: Driver,
    // Removed once the browsers that wrote there are gone.
    _browser_tmp: tempfile::TempDir,
    _profile: tempfile::TempDir,
    _tmp: tempfile::TempDir,
}

impl Ui {
    /// The fixture tree of the HTTP tests (tenants acme and globex, tokens, the `hello`,
    /// `approve`, `needs-param` and `broken` workflows) plus `fails`, served by a child
    /// `magrathea serve`, and a fresh headless Chromium.
    pub async fn start() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        crate::http_common::tree(&root);
        crate::http_common::write(&root.join("acme/shop/_vance/workflows/fails.yaml"), FAILS);
        crate::http_common::write(&root.join("acme/shop/_vance/workflows/parent.yaml"), PARENT);
        let server = ServeChild::start(&root);
        let browser_tmp = tempfile::tempdir().unwrap();
        let driver = Driver::start(browser_tmp.path());
        let profile = tempfile::tempdir().unwrap();
        let chromium =
            std::env::var("MAGRATHEA_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": chromium,
                "args": [
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-quic",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--disable-dev-shm-usage",
                    "--window-size=1280,900",
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            }),
        );
        let c = ClientBuilder::new(HttpConnector::new())
            .capabilities(caps)
            .connect(&driver.url)
            .await
            .expect("a WebDriver session of headless Chromium");
        Self {
            c,
            server,
            http: reqwest::Client::new(),
            root,
            _driver: driver,
            _browser_tmp: browser_tmp,
            _profile: profile,
            _tmp: tmp,
        }
    }

    /// The URL of `path` on the server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.server.base, path)
    }

    /// Opens `/ui` and signs in with `token`; waits for the views' navigation.
    pub async fn sign_in(&self, token: &str) {
        self.c.goto(&self.url("/ui")).await.unwrap();
        self.wait_js("return !!document.getElementById('token') && !document.getElementById('sign-in').hidden", "the sign-in form").await;
        self.js(
            "const t = document.getElementById('token'); t.value = arguments[0]; \
             document.getElementById('sign-in-form').requestSubmit(); return null;",
            vec![json!(token)],
        )
        .await;
        self.wait_js(
            "return !document.getElementById('nav').hidden",
            "the signed-in navigation",
        )
        .await;
        self.pick_project("acme/shop").await;
    }

    /// Chooses `tenant/project` in the picker, as a person would.
    pub async fn pick_project(&self, choice: &str) {
        self.wait_js_args(
            "const s = document.getElementById('project-select'); \
             if (![...s.options].some(o => o.value === arguments[0])) return false; \
             if (s.value !== arguments[0]) { s.value = arguments[0]; \
               s.dispatchEvent(new Event('change')); } \
             return true;",
            vec![json!(choice)],
            "the project in the picker",
        )
        .await;
    }

    /// Runs `script` in the page with `args` and returns its value.
    pub async fn js(&self, script: &str, args: Vec<Value>) -> Value {
        self.c.execute(script, args).await.unwrap()
    }

    /// Polls `script` until it returns a truthy value; returns that value.
    pub async fn wait_js(&self, script: &str, what: &str) -> Value {
        self.wait_js_args(script, vec![], what).await
    }

    /// [`Ui::wait_js`] with arguments.
    pub async fn wait_js_args(&self, script: &str, args: Vec<Value>, what: &str) -> Value {
        let deadline = Instant::now() + WAIT;
        let mut last;
        loop {
            match self.c.execute(script, args.clone()).await {
                Ok(v) if truthy(&v) => return v,
                Ok(v) => last = v,
                Err(e) => last = Value::String(e.to_string()),
            }
            if Instant::now() > deadline {
                let text = self
                    .c
                    .execute("return document.body.innerText", vec![])
                    .await
                    .unwrap_or(Value::Null);
                panic!("waited in vain for {what} (last {last}); the page shows:\n{text}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Goes to the view `hash` (e.g. `#/inbox`) without reloading the page.
    pub async fn view(&self, hash: &str) {
        self.js(
            "location.hash = arguments[0]; return null;",
            vec![json!(hash)],
        )
        .await;
    }

    /// Clicks the element `css` (waiting for it).
    pub async fn click(&self, css: &str) {
        self.wait_js_args(
            "return !!document.querySelector(arguments[0])",
            vec![json!(css)],
            css,
        )
        .await;
        self.c
            .find(fantoccini::Locator::Css(css))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
    }

    /// The text of the whole page.
    pub async fn page_text(&self) -> String {
        self.js("return document.body.innerText", vec![])
            .await
            .as_str()
            .unwrap_or("")
            .to_owned()
    }

    /// Saves a screenshot of the page as `target/ui-screenshots/<name>.png`.
    pub async fn screenshot(&self, name: &str) {
        let png = self.c.screenshot().await.unwrap();
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
    }

    /// Starts `name` in acme/shop with `token`; the run's id.
    pub async fn start_run(&self, name: &str, token: &str) -> String {
        self.server.start_run(&self.http, name, token).await
    }

    /// Answers the first pending item of acme/shop's inbox over the API with `answer`.
    pub async fn answer_over_the_api(&self, answer: Value) {
        let items: Value = self
            .http
            .get(self.url("/brain/acme/project/shop/inbox"))
            .bearer_auth(crate::http_common::ACME)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let item = items[0]["id"].as_str().unwrap().to_owned();
        let r = self
            .http
            .post(self.url(&format!("/brain/acme/project/shop/inbox/{item}/answer")))
            .bearer_auth(crate::http_common::ACME)
            .json(&answer)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    }

    /// Waits over the API until acme/shop's `run` has one of `statuses`.
    pub async fn wait_status(&self, run: &str, statuses: &[&str]) -> Value {
        self.server
            .wait_status(&self.http, run, crate::http_common::ACME, statuses)
            .await
    }

    /// Ends the browser session (Chromium exits), then drops the rest.
    pub async fn close(self) {
        let _ = self.c.clone().close().await;
    }
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::String(s) => !s.is_empty(),
        Value::Number(n) => n.as_f64() != Some(0.0),
        _ => true,
    }
}

/// `target/ui-screenshots`.
pub fn screenshot_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("ui-screenshots")
}
