package v1

import (
	"reflect"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// clusterV1beta2Data is what a v1 EtcdCluster keeps of its v1beta2 original.
type clusterV1beta2Data struct {
	BusyboxImage       string                 `json:"busyboxImage,omitempty"`
	DNSTimeoutInSecond *int64                 `json:"dnsTimeoutInSecond,omitempty"`
	Conditions         []v1beta2ConditionData `json:"conditions,omitempty"`
	// NoPod: the v1beta2 object had no spec.pod; v1 made one to hold pod options that
	// v1beta2 stores as annotations.
	NoPod bool `json:"noPod,omitempty"`
}

// clusterV1Data is what a v1beta2 EtcdCluster keeps of its v1 original.
type clusterV1Data struct {
	DNSTimeout *metav1.Duration  `json:"dnsTimeout,omitempty"`
	Conditions []v1ConditionData `json:"conditions,omitempty"`
	// spec.etcd is stored as annotations; these keep the v1 object's own annotations of
	// those keys, and an empty spec.etcd ({}), which no annotation records.
	annotatedFields
	EmptyEtcd bool `json:"emptyEtcd,omitempty"`
	// EmptyMaintenance: the v1 object had spec.maintenance: {}.
	EmptyMaintenance bool `json:"emptyMaintenance,omitempty"`
	// EmptyClientService: the v1 object had spec.clientService: {}.
	EmptyClientService bool `json:"emptyClientService,omitempty"`
}

var _ conversion.Convertible = &EtcdCluster{}

// ConvertTo converts this v1 EtcdCluster to the v1beta2 hub.
func (src *EtcdCluster) ConvertTo(hub conversion.Hub) error {
	dst := hub.(*v1beta2.EtcdCluster)
	in := src.DeepCopy() // dst shares nothing with src
	dst.ObjectMeta = in.ObjectMeta
	var kept clusterV1beta2Data
	if err := popConversionData(&dst.ObjectMeta, &kept); err != nil {
		return err
	}
	var lost clusterV1Data

	s := &in.Spec
	dst.Spec = v1beta2.EtcdClusterSpec{
		Size:       s.Size,
		Repository: s.Repository,
		Version:    s.Version,
		Paused:     s.Paused,
	}
	if p := s.Pod; p != nil {
		dp := &v1beta2.PodPolicy{
			Labels:                    p.Labels,
			NodeSelector:              p.NodeSelector,
			AntiAffinity:              p.AntiAffinity,
			Affinity:                  p.Affinity,
			Resources:                 p.Resources,
			EtcdEnv:                   p.Env,
			Tolerations:               p.Tolerations,
			PersistentVolumeClaimSpec: p.PersistentVolumeClaimSpec,
			Annotations:               p.Annotations,
			BusyboxImage:              kept.BusyboxImage,
			SecurityContext:           p.SecurityContext,
			ClusterDomain:             p.ClusterDomain,
			HostAliases:               p.HostAliases,
			Volumes:                   p.Volumes,
			VolumeMounts:              p.VolumeMounts,
		}
		dp.DNSTimeoutInSecond, lost.DNSTimeout = fromV1Duration(p.DNSTimeout, kept.DNSTimeoutInSecond)
		if kept.NoPod && reflect.DeepEqual(dp, &v1beta2.PodPolicy{}) {
			dp = nil
		}
		dst.Spec.Pod = dp
	}
	for _, f := range podKnobFields(s.Pod) {
		fieldToAnnotation(&dst.ObjectMeta, f, &lost.annotatedFields)
	}
	for _, f := range clientServiceFields(s.ClientService) {
		fieldToAnnotation(&dst.ObjectMeta, f, &lost.annotatedFields)
	}
	lost.EmptyClientService = emptyClientService(s.ClientService)
	if t := s.TLS; t != nil {
		dst.Spec.TLS = &v1beta2.TLSPolicy{}
		if st := t.Static; st != nil {
			dst.Spec.TLS.Static = &v1beta2.StaticTLS{OperatorSecret: st.OperatorSecret}
			if m := st.Member; m != nil {
				dst.Spec.TLS.Static.Member = &v1beta2.MemberSecret{PeerSecret: m.PeerSecret, ServerSecret: m.ServerSecret}
			}
		}
		dst.Spec.TLS.Auto = issuerToAuto(t.Issuer)
		dst.Spec.TLS.CertManager = issuerToCertManager(t.Issuer)
	}

	for _, f := range etcdSettingsFields(s.Etcd) {
		fieldToAnnotation(&dst.ObjectMeta, f, &lost.annotatedFields)
	}
	lost.EmptyEtcd = s.Etcd != nil && *s.Etcd == (EtcdSettings{})
	for _, f := range maintenanceFields(s.Maintenance) {
		fieldToAnnotation(&dst.ObjectMeta, f, &lost.annotatedFields)
	}
	lost.EmptyMaintenance = s.Maintenance != nil && *s.Maintenance == (Maintenance{})
	for _, f := range authFields(s.Auth) {
		fieldToAnnotation(&dst.ObjectMeta, f, &lost.annotatedFields)
	}

	st := &in.Status
	dst.Status = v1beta2.EtcdClusterStatus{
		Phase:              v1beta2.ClusterPhase(st.Phase),
		Reason:             st.Reason,
		ControlPaused:      st.ControlPaused,
		Size:               st.Size,
		ServiceName:        st.ServiceName,
		ClientPort:         st.ClientPort,
		Members:            membersToHub(st.Members),
		CurrentVersion:     st.CurrentVersion,
		TargetVersion:      st.TargetVersion,
		Selector:           st.Selector,
		ObservedGeneration: st.ObservedGeneration,
		ClusterID:          st.ClusterID,
		Bootstrapped:       st.Bootstrapped,
		BootstrapMembers:   st.BootstrapMembers,
	}
	dst.Status.Conditions, lost.Conditions = conditionsFromV1(st.Conditions, kept.Conditions)
	if pm := st.PendingMember; pm != nil {
		dst.Status.PendingMember = &v1beta2.PendingMember{Name: pm.Name, ID: pm.ID, AddedAt: pm.AddedAt}
	}
	if r := st.Recovery; r != nil {
		dst.Status.Recovery = &v1beta2.RecoveryStatus{
			Source: r.Source, SourceID: r.SourceID, Revision: r.Revision,
			Member: r.Member, Token: r.Token, StartedAt: r.StartedAt,
		}
	}
	dst.Status.VersionSince = versionSinceToHub(st.VersionSince)
	dst.Status.UpgradeBackup = st.UpgradeBackup.DeepCopy()
	dst.Status.Maintenance = maintenanceStatusToHub(st.Maintenance)
	dst.Status.BackupRestore = backupRestoreToHub(st.BackupRestore)
	return putConversionData(&dst.ObjectMeta, &lost)
}

// ConvertFrom converts the v1beta2 hub to this v1 EtcdCluster.
func (dst *EtcdCluster) ConvertFrom(hub conversion.Hub) error {
	in := hub.(*v1beta2.EtcdCluster).DeepCopy() // dst shares nothing with the hub
	dst.ObjectMeta = in.ObjectMeta
	var kept clusterV1Data
	if err := popConversionData(&dst.ObjectMeta, &kept); err != nil {
		return err
	}
	var lost clusterV1beta2Data

	s := &in.Spec
	dst.Spec = EtcdClusterSpec{
		Size:       s.Size,
		Repository: s.Repository,
		Version:    s.Version,
		Paused:     s.Paused,
	}
	if p := s.Pod; p != nil {
		dp := &PodPolicy{
			Labels:                    p.Labels,
			NodeSelector:              p.NodeSelector,
			AntiAffinity:              p.AntiAffinity,
			Affinity:                  p.Affinity,
			Resources:                 p.Resources,
			Env:                       p.EtcdEnv,
			Tolerations:               p.Tolerations,
			PersistentVolumeClaimSpec: p.PersistentVolumeClaimSpec,
			Annotations:               p.Annotations,
			SecurityContext:           p.SecurityContext,
			ClusterDomain:             p.ClusterDomain,
			HostAliases:               p.HostAliases,
			Volumes:                   p.Volumes,
			VolumeMounts:              p.VolumeMounts,
		}
		lost.BusyboxImage = p.BusyboxImage
		dp.DNSTimeout, lost.DNSTimeoutInSecond = toV1Duration(p.DNSTimeoutInSecond, kept.DNSTimeout)
		dst.Spec.Pod = dp
	}
	if t := s.TLS; t != nil {
		dst.Spec.TLS = &TLSPolicy{}
		if st := t.Static; st != nil {
			dst.Spec.TLS.Static = &StaticTLS{OperatorSecret: st.OperatorSecret}
			if m := st.Member; m != nil {
				dst.Spec.TLS.Static.Member = &MemberSecret{PeerSecret: m.PeerSecret, ServerSecret: m.ServerSecret}
			}
		}
		dst.Spec.TLS.Issuer = tlsIssuerFrom(t.Auto, t.CertManager)
	}

	knobs := dst.Spec.Pod
	if knobs == nil {
		knobs = &PodPolicy{}
	}
	if podKnobsFromAnnotations(&dst.ObjectMeta, kept.annotatedFields, knobs) && dst.Spec.Pod == nil {
		dst.Spec.Pod, lost.NoPod = knobs, true
	}
	dst.Spec.ClientService = clientServiceFromAnnotations(&dst.ObjectMeta, kept)
	dst.Spec.Etcd = etcdSettingsFromAnnotations(&dst.ObjectMeta, kept)
	dst.Spec.Maintenance = maintenanceFromAnnotations(&dst.ObjectMeta, kept)
	dst.Spec.Auth = authFromAnnotations(&dst.ObjectMeta, kept)

	st := &in.Status
	dst.Status = EtcdClusterStatus{
		Phase:              ClusterPhase(st.Phase),
		Reason:             st.Reason,
		ControlPaused:      st.ControlPaused,
		Size:               st.Size,
		ServiceName:        st.ServiceName,
		ClientPort:         st.ClientPort,
		Members:            membersFromHub(st.Members),
		CurrentVersion:     st.CurrentVersion,
		TargetVersion:      st.TargetVersion,
		Selector:           st.Selector,
		ObservedGeneration: st.ObservedGeneration,
		ClusterID:          st.ClusterID,
		Bootstrapped:       st.Bootstrapped,
		BootstrapMembers:   st.BootstrapMembers,
	}
	dst.Status.Conditions, lost.Conditions = conditionsToV1(st.Conditions, kept.Conditions)
	if pm := st.PendingMember; pm != nil {
		dst.Status.PendingMember = &PendingMember{Name: pm.Name, ID: pm.ID, AddedAt: pm.AddedAt}
	}
	if r := st.Recovery; r != nil {
		dst.Status.Recovery = &RecoveryStatus{
			Source: r.Source, SourceID: r.SourceID, Revision: r.Revision,
			Member: r.Member, Token: r.Token, StartedAt: r.StartedAt,
		}
	}
	dst.Status.VersionSince = versionSinceFromHub(st.VersionSince)
	dst.Status.UpgradeBackup = st.UpgradeBackup.DeepCopy()
	dst.Status.Maintenance = maintenanceStatusFromHub(st.Maintenance)
	dst.Status.BackupRestore = backupRestoreFromHub(st.BackupRestore)
	return putConversionData(&dst.ObjectMeta, &lost)
}

// etcdSettingsFields are spec.etcd's fields with the annotations v1beta2 stores them as.
func etcdSettingsFields(e *EtcdSettings) []annotatedField {
	if e == nil {
		e = &EtcdSettings{}
	}
	quota := ""
	if e.QuotaBackendBytes != 0 {
		quota = strconv.FormatInt(e.QuotaBackendBytes, 10)
	}
	return []annotatedField{
		{annotation: v1beta2.QuotaBackendBytesAnnotation, value: quota, fits: isQuotaText},
		{annotation: v1beta2.AutoCompactionModeAnnotation, value: string(e.AutoCompactionMode)},
		{annotation: v1beta2.AutoCompactionRetentionAnnotation, value: e.AutoCompactionRetention},
	}
}

// etcdSettingsFromAnnotations takes spec.etcd out of the v1beta2 annotations; nil when
// none holds a field (and the v1 original had no empty spec.etcd).
func etcdSettingsFromAnnotations(meta *metav1.ObjectMeta, kept clusterV1Data) *EtcdSettings {
	quota := annotationToField(meta, v1beta2.QuotaBackendBytesAnnotation, kept.annotatedFields, isQuotaText)
	e := &EtcdSettings{
		AutoCompactionMode:      AutoCompactionMode(annotationToField(meta, v1beta2.AutoCompactionModeAnnotation, kept.annotatedFields, anyValue)),
		AutoCompactionRetention: annotationToField(meta, v1beta2.AutoCompactionRetentionAnnotation, kept.annotatedFields, anyValue),
	}
	if quota != "" {
		e.QuotaBackendBytes, _ = strconv.ParseInt(quota, 10, 64)
	}
	if *e == (EtcdSettings{}) && !kept.EmptyEtcd {
		return nil
	}
	return e
}

// isQuotaText: the annotation is a number the int64 field holds and writes back as the
// same text ("4294967296", not "04294967296", "4Gi" or "0", which is unset).
func isQuotaText(v string) bool {
	n, err := strconv.ParseInt(v, 10, 64)
	return err == nil && n != 0 && strconv.FormatInt(n, 10) == v
}
