//! The device tester (target_os = "xous", cargo feature `tester`; docs/trng-tester-protocol.md
//! section 3.2): the mailbox block `trng_tester` and two physically contiguous frame slots in
//! RAM, read by the host over the USB debug bridge (a Precursor) or the UART Wishbone bridge (the
//! simulated Precursor). One thread of the server runs [`MailboxTester`] with the same fills as
//! the hosted tester (`TrngServer::tester_fill`: the same health gating; error frames, never raw
//! or stale bytes, when the health tests fail).
//!
//! Built only with the feature: the default device image has no tester (docs/security.md).

use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use trng_core::spec::tester as T;

use crate::server::TrngServer;
use crate::tester_mailbox::{fill_until, Mailbox, MailboxTester, Step, SLOT_BYTES};

const PAGE: usize = 4096;
/// A slot rounded up to whole pages (129 pages).
const SLOT_MAP_BYTES: usize = SLOT_BYTES.div_ceil(PAGE) * PAGE;
/// How long the tester sleeps between polls of an idle mailbox.
const POLL: Duration = Duration::from_millis(1);

/// The mailbox page, mapped at its physical address.
struct Mmio(*mut u32);

// Safety: the page is this process's for its lifetime and only the tester thread touches it.
unsafe impl Send for Mmio {}

impl Mailbox for Mmio {
    fn read(&mut self, offset: usize) -> u32 {
        // Safety: offset < 0x18 within the mapped page (spec offsets, checked by MailboxTester's use)
        unsafe { self.0.add(offset / 4).read_volatile() }
    }
    fn write(&mut self, offset: usize, value: u32) {
        // Safety: as above
        unsafe { self.0.add(offset / 4).write_volatile(value) }
    }
}

/// Claim one physically contiguous slot: the kernel grants a physical RAM range only if no page
/// of it is owned, so try page-aligned candidates from the top of the spec's RAM range down.
fn claim_slot(below: usize) -> Result<(xous::MemoryRange, usize), String> {
    let low = T::mailbox::SLOT_RAM_BASE;
    let mut phys = below.checked_sub(SLOT_MAP_BYTES).ok_or("no room for a tester slot")? & !(PAGE - 1);
    while phys >= low {
        if let Ok(r) = xous::map_memory(
            xous::MemoryAddress::new(phys),
            None,
            SLOT_MAP_BYTES,
            xous::MemoryFlags::R | xous::MemoryFlags::W,
        ) {
            return Ok((r, phys));
        }
        phys = match phys.checked_sub(SLOT_MAP_BYTES) {
            Some(p) => p,
            None => break,
        };
    }
    Err(format!("no free physically contiguous {SLOT_MAP_BYTES}-byte range in RAM {low:#x}..{below:#x}"))
}

/// Map the mailbox, claim the slots, publish MAGIC and serve frames forever on a thread.
pub fn start(srv: Arc<Mutex<TrngServer>>, notify: Sender<()>) -> Result<(), String> {
    let page = xous::map_memory(
        xous::MemoryAddress::new(T::mailbox::BASE),
        None,
        PAGE,
        xous::MemoryFlags::R | xous::MemoryFlags::W,
    )
    .map_err(|e| format!("map the tester mailbox at {:#x}: {e:?}", T::mailbox::BASE))?;
    let top = T::mailbox::SLOT_RAM_BASE + T::mailbox::SLOT_RAM_SIZE;
    let (mut r0, p0) = claim_slot(top)?;
    let (mut r1, p1) = claim_slot(p0)?;
    let mmio = Mmio(page.as_mut_ptr() as *mut u32);
    std::thread::Builder::new()
        .name("trng-tester".into())
        .spawn(move || {
            let (s0, s1) = (r0.as_slice_mut::<u8>(), r1.as_slice_mut::<u8>());
            let mut t = MailboxTester::new(mmio, [s0, s1], [p0 as u32, p1 as u32]);
            println!("{} at {:#x}, slots {p0:#x} {p1:#x}", T::DEVICE_MARKER, T::mailbox::BASE);
            // one line as a fill starts and one as its frame is published: the simulation
            // stamps each with its cycle (device time per frame, docs/sim.md)
            let mut f = |mode: u32, out: &mut [u8], keep: &mut dyn FnMut() -> bool| {
                println!("{} fill mode={mode}", T::DEVICE_MARKER);
                fill_until(&srv, mode, out, keep)
            };
            loop {
                match t.step(&mut f) {
                    Step::Published { seq, status } => {
                        println!("{} published seq={seq} status={status}", T::DEVICE_MARKER);
                        if status == T::status::HEALTH as u32 {
                            let _ = notify.send(());
                        }
                    }
                    // the host changed CONTROL: the next round fills with the new value
                    Step::Abandoned { mode } => {
                        println!("{} abandoned mode={mode} (CONTROL changed)", T::DEVICE_MARKER)
                    }
                    Step::Idle | Step::WaitingForAck => std::thread::sleep(POLL),
                }
            }
        })
        .map_err(|e| format!("spawn the tester thread: {e}"))?;
    Ok(())
}
