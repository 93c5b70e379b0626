package v1

import (
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-operator/etcd-operator/api/v1beta2"
)

// EtcdRestore's spec.backupRef and spec.select are v1beta2 annotations; status.backup
// and EtcdBackup's status.backups are the same fields in both versions.

// restoreV1Data is what a v1beta2 EtcdRestore keeps of its v1 original.
type restoreV1Data struct {
	// The v1 object had a backupRef with an empty name, or a select with no field set,
	// which no annotation records.
	EmptyBackupRef bool `json:"emptyBackupRef,omitempty"`
	EmptySelect    bool `json:"emptySelect,omitempty"`
	// Annotations the v1 object carried of the keys the fields are stored as.
	annotatedFields
}

// selectionFields are spec.backupRef's and spec.select's fields with their annotations.
func selectionFields(ref *BackupRef, sel *BackupSelector) []annotatedField {
	name, before, minRev := "", "", ""
	if ref != nil {
		name = ref.Name
	}
	if sel != nil {
		if sel.NewestBefore != nil && !sel.NewestBefore.IsZero() {
			before = sel.NewestBefore.UTC().Format(time.RFC3339)
		}
		if sel.MinRevision != 0 {
			minRev = strconv.FormatInt(sel.MinRevision, 10)
		}
	}
	return []annotatedField{
		{annotation: v1beta2.RestoreBackupRefAnnotation, value: name},
		{annotation: v1beta2.RestoreNewestBeforeAnnotation, value: before, fits: isUTCTimeText},
		{annotation: v1beta2.RestoreMinRevisionAnnotation, value: minRev, fits: isRevisionText},
	}
}

// selectionToAnnotations stores spec.backupRef and spec.select as v1beta2 annotations.
func selectionToAnnotations(meta *metav1.ObjectMeta, spec *EtcdRestoreSpec, lost *restoreV1Data) {
	for _, f := range selectionFields(spec.BackupRef, spec.Select) {
		fieldToAnnotation(meta, f, &lost.annotatedFields)
	}
	lost.EmptyBackupRef = spec.BackupRef != nil && spec.BackupRef.Name == ""
	lost.EmptySelect = spec.Select != nil && (spec.Select.NewestBefore == nil || spec.Select.NewestBefore.IsZero()) && spec.Select.MinRevision == 0
}

// selectionFromAnnotations takes spec.backupRef and spec.select out of the v1beta2
// annotations.
func selectionFromAnnotations(meta *metav1.ObjectMeta, kept restoreV1Data) (*BackupRef, *BackupSelector) {
	var ref *BackupRef
	if name := annotationToField(meta, v1beta2.RestoreBackupRefAnnotation, kept.annotatedFields, anyValue); name != "" || kept.EmptyBackupRef {
		ref = &BackupRef{Name: name}
	}
	sel := &BackupSelector{}
	if v := annotationToField(meta, v1beta2.RestoreNewestBeforeAnnotation, kept.annotatedFields, isUTCTimeText); v != "" {
		t, _ := time.Parse(time.RFC3339, v)
		sel.NewestBefore = &metav1.Time{Time: t}
	}
	if v := annotationToField(meta, v1beta2.RestoreMinRevisionAnnotation, kept.annotatedFields, isRevisionText); v != "" {
		sel.MinRevision, _ = strconv.ParseInt(v, 10, 64)
	}
	if sel.NewestBefore == nil && sel.MinRevision == 0 && !kept.EmptySelect {
		sel = nil
	}
	return ref, sel
}

// isUTCTimeText: the annotation is a time the field writes back as the same text (RFC
// 3339 in UTC, whole seconds). A time with an offset stays an annotation, which the
// operator reads as well.
func isUTCTimeText(v string) bool {
	t, err := time.Parse(time.RFC3339, v)
	return err == nil && !t.IsZero() && t.UTC().Format(time.RFC3339) == v
}

// isRevisionText: the annotation is a number the int64 field holds and writes back as
// the same text (not "0", which is unset, nor "007").
func isRevisionText(v string) bool {
	n, err := strconv.ParseInt(v, 10, 64)
	return err == nil && n != 0 && strconv.FormatInt(n, 10) == v
}

func storedBackupsToV1beta2(in []StoredBackup) []v1beta2.StoredBackup {
	if in == nil {
		return nil
	}
	out := make([]v1beta2.StoredBackup, len(in))
	for i, b := range in {
		out[i] = v1beta2.StoredBackup(b)
	}
	return out
}

func storedBackupsToV1(in []v1beta2.StoredBackup) []StoredBackup {
	if in == nil {
		return nil
	}
	out := make([]StoredBackup, len(in))
	for i, b := range in {
		out[i] = StoredBackup(b)
	}
	return out
}

func chosenBackupToV1beta2(in *ChosenBackup) *v1beta2.ChosenBackup {
	if in == nil {
		return nil
	}
	out := v1beta2.ChosenBackup(*in)
	return &out
}

func chosenBackupToV1(in *v1beta2.ChosenBackup) *ChosenBackup {
	if in == nil {
		return nil
	}
	out := ChosenBackup(*in)
	return &out
}
