//! Echo server for the IPC round-trip benchmarks (see `hosted_tests::echo`).
//! Scalar: returns arg1 + 1. Mutable lend: adds 1 to every byte. Unknown opcodes are logged
//! and answered (blocking ones with an error scalar) so the caller never hangs.

use hosted_tests::echo::{Opcode, SERVER_NAME};

fn main() {
    let xns = xous_api_names::XousNames::new().expect("xous-names");
    let sid = xns.register_name(SERVER_NAME, None).expect("register echo server");
    hosted_tests::marker("ECHO-READY");
    loop {
        let mut env = match xous::receive_message(sid) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("echo-server: receive_message: {e:?}");
                continue;
            }
        };
        let id = env.body.id();
        match (Opcode::from_usize(id), &mut env.body) {
            (Some(Opcode::ScalarPlusOne), xous::Message::BlockingScalar(s)) => {
                xous::return_scalar(env.sender, s.arg1.wrapping_add(1)).ok();
            }
            (Some(Opcode::LendIncrement), xous::Message::MutableBorrow(m)) => {
                for b in m.buf.as_slice_mut::<u8>() {
                    *b = b.wrapping_add(1);
                }
                // dropping the envelope returns the memory
            }
            (Some(Opcode::Quit), xous::Message::BlockingScalar(_)) => {
                xous::return_scalar(env.sender, 0).ok();
                break;
            }
            (_, xous::Message::BlockingScalar(_)) => {
                eprintln!("echo-server: bad opcode {id}");
                xous::return_scalar(env.sender, usize::MAX).ok();
            }
            _ => eprintln!("echo-server: unexpected message {id}"),
        }
    }
    xns.unregister_server(sid).ok();
}
