//! Record ids are random: `ins_<32 hex>` → `ins_<id>`, same for `ep_` and
//! `raw_`, so that outputs can be compared and snapshotted.

pub fn redact_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some((i, prefix)) = ["ins_", "ep_", "raw_"]
        .iter()
        .filter_map(|p| rest.find(p).map(|i| (i, *p)))
        .min()
    {
        let after = &rest[i + prefix.len()..];
        let hex = after.chars().take_while(char::is_ascii_hexdigit).count();
        out.push_str(&rest[..i + prefix.len()]);
        if hex == 32 {
            out.push_str("<id>");
            rest = &after[32..];
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    out
}
