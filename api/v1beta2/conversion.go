package v1beta2

// v1beta2 is the conversion hub of its group: the storage version, and the version the
// operator works in. Other versions (api/v1) convert to and from it; the conversion
// webhook (internal/webhook) finds the hub through these methods.

// Hub marks EtcdCluster as the conversion hub.
func (*EtcdCluster) Hub() {}

// Hub marks EtcdBackup as the conversion hub.
func (*EtcdBackup) Hub() {}

// Hub marks EtcdRestore as the conversion hub.
func (*EtcdRestore) Hub() {}
