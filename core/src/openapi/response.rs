//! An HTTP answer → what the guest sees.
