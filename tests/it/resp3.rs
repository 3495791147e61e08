//! Under RESP3 every `WITHTTL` reply pairs each member with its TTL, as
//! `ZRANGE ... WITHSCORES` pairs each member with its score; RESP2 replies
//! stay flat.

use crate::harness::*;
use redis::{Connection, Value};

fn resp3(s: &Server) -> Connection {
    redis::Client::open(format!("redis://127.0.0.1:{}/?protocol=resp3", s.port))
        .and_then(|c| c.get_connection())
        .expect("a RESP3 connection")
}

/// The shape of a reply: what is an array of what.
fn shape(v: &Value) -> String {
    match v {
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(shape).collect::<Vec<_>>().join(",")
        ),
        Value::BulkString(_) => "s".into(),
        Value::Int(_) => "i".into(),
        Value::Double(_) => "d".into(),
        other => format!("{other:?}"),
    }
}

/// Every WITHTTL form of the module's commands: (command, where the
/// member/ttl list sits in the reply).
fn with_ttl_replies(c: &mut Connection) -> Vec<(String, Value)> {
    let cmds: [&[&str]; 8] = [
        &["XSET.MEMBERS", "k", "WITHTTL"],
        &["XSET.MEMBERS", "k", "BYDEADLINE", "-inf", "+inf", "WITHTTL"],
        &["XSET.SCAN", "k", "0", "WITHTTL"],
        &["XSET.RANDMEMBER", "k", "2", "WITHTTL"],
        &["XSET.RANDMEMBER", "k", "-2", "WITHTTL"],
        &["XSET.INTER", "2", "k", "k", "WITHTTL"],
        &["XSET.UNION", "2", "k", "nope", "WITHTTL"],
        &["XSET.DIFF", "2", "k", "nope", "WITHTTL"],
    ];
    cmds.iter()
        .map(|cmd| {
            let bytes: Vec<&[u8]> = cmd.iter().map(|a| a.as_bytes()).collect();
            let v: Value = q(c, &bytes);
            let list = match cmd[0] {
                "XSET.SCAN" => match v {
                    Value::Array(mut parts) if parts.len() == 2 => parts.remove(1),
                    other => panic!("{other:?}"),
                },
                _ => v,
            };
            (cmd.join(" "), list)
        })
        .collect()
}

#[test]
fn with_ttl_pairs_under_resp3_and_stays_flat_under_resp2() {
    let s = Server::start(&[]);
    let mut c2 = s.conn();
    q::<i64>(&mut c2, c!["XSET.ADD", "k", "a", "100", "b", "200"]);
    q::<i64>(&mut c2, c!["ZADD", "z", "1", "a", "2", "b"]);
    let mut c3 = resp3(&s);
    let native: Value = q(&mut c3, c!["ZRANGE", "z", "0", "-1", "WITHSCORES"]);
    assert_eq!(shape(&native), "[[s,d],[s,d]]", "the native RESP3 shape");
    for (cmd, list) in with_ttl_replies(&mut c3) {
        assert_eq!(shape(&list), "[[s,i],[s,i]]", "{cmd} under RESP3");
    }
    for (cmd, list) in with_ttl_replies(&mut c2) {
        assert_eq!(shape(&list), "[s,i,s,i]", "{cmd} under RESP2");
    }
}
