//! A scripted local HTTP/1.1 server for the LLM tests: it answers each
//! request with the next scripted [`Reply`] (the last one repeats) or, with
//! [`Server::respond_with`], with whatever a function of the request says
//! (so a runtime's concurrent contexts each get their own script); streams
//! bodies chunked with optional pauses, and records every request so tests
//! can assert what the client sent.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// How the server answers one request.
#[derive(Clone, Debug)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// The content type.
    pub content_type: &'static str,
    /// Wait this long before sending anything.
    pub delay_before_headers: Duration,
    /// Body pieces, each sent as one HTTP chunk.
    pub chunks: Vec<String>,
    /// Wait this long between pieces.
    pub delay_between_chunks: Duration,
    /// Echo the request's Authorization header into the body (to check
    /// the client redacts what a server sends back).
    pub echo_authorization: bool,
}

impl Reply {
    /// 200 with an NDJSON stream, one line per chunk.
    pub fn ndjson(lines: &[&str]) -> Reply {
        Reply::ok("application/x-ndjson", lines.iter().map(|l| format!("{l}\n")).collect())
    }

    /// 200 with server-sent events, one `data:` event per chunk.
    pub fn sse(events: &[&str]) -> Reply {
        Reply::ok("text/event-stream", events.iter().map(|e| format!("data: {e}\n\n")).collect())
    }

    /// 200 with these raw body pieces.
    pub fn ok(content_type: &'static str, chunks: Vec<String>) -> Reply {
        Reply {
            status: 200,
            content_type,
            delay_before_headers: Duration::ZERO,
            chunks,
            delay_between_chunks: Duration::ZERO,
            echo_authorization: false,
        }
    }

    /// An error status with a JSON body.
    pub fn status(status: u16, body: &str) -> Reply {
        Reply { status, ..Reply::ok("application/json", vec![body.to_owned()]) }
    }
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// `POST /api/chat`.
    pub request_line: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` if it was not JSON).
    pub body: serde_json::Value,
}

impl Recorded {
    /// A header's value, if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// Chooses the reply to a request.
type Responder = dyn Fn(&Recorded) -> Reply + Send + Sync;

/// A running server; it lives until the test process ends.
pub struct Server {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Server {
    /// Starts a server that answers with `script` in order (of connection).
    pub fn start(script: Vec<Reply>) -> Server {
        assert!(!script.is_empty());
        let next = std::sync::atomic::AtomicUsize::new(0);
        Server::respond_with(move |_| {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            script[i.min(script.len() - 1)].clone()
        })
    }

    /// Starts a server that answers each request with `respond(request)`.
    pub fn respond_with(respond: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&requests);
        let respond: Arc<Responder> = Arc::new(respond);
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let recorded = Arc::clone(&recorded);
                let respond = Arc::clone(&respond);
                thread::spawn(move || serve(stream, &*respond, &recorded));
            }
        });
        Server { addr, requests }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, respond: &Responder, recorded: &Mutex<Vec<Recorded>>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let Some(req) = read_request(&mut reader) else { return };
    let auth = req.header("authorization").unwrap_or("").to_owned();
    let reply = respond(&req);
    recorded.lock().unwrap().push(req);
    // Write errors mean the client hung up (e.g. after its timeout): fine.
    let _ = write_reply(stream, &reply, &auth);
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Recorded> {
    let mut request_line = String::new();
    reader.read_line(&mut request_line).ok()?;
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (k, v) = line.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    let len: usize = headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    let body = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    Some(Recorded { request_line: request_line.trim_end().to_owned(), headers, body })
}

fn write_reply(mut stream: TcpStream, reply: &Reply, auth: &str) -> std::io::Result<()> {
    thread::sleep(reply.delay_before_headers);
    write!(
        stream,
        "HTTP/1.1 {} X\r\ncontent-type: {}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
        reply.status, reply.content_type
    )?;
    stream.flush()?;
    let mut chunks = reply.chunks.clone();
    if reply.echo_authorization {
        chunks.push(format!("(you sent: {auth})"));
    }
    // An empty chunk would end the body early.
    for (i, chunk) in chunks.iter().filter(|c| !c.is_empty()).enumerate() {
        if i > 0 {
            thread::sleep(reply.delay_between_chunks);
        }
        write!(stream, "{:x}\r\n{chunk}\r\n", chunk.len())?;
        stream.flush()?;
    }
    write!(stream, "0\r\n\r\n")?;
    stream.flush()
}

/// A port nobody listens on: bound, then released.
pub fn refused_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    format!("http://{addr}")
}
