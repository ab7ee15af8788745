//! clawai ui (in progress).
