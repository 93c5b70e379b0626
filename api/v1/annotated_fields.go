package v1

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// v1 fields that v1beta2 stores as annotations (EtcdBackup's schedule, EtcdCluster's etcd
// settings): how they move between the two without losing an annotation the v1 object
// carried of the same key.

// annotatedField is a v1 field's annotation and value ("" when unset), and which
// annotations the field can hold (nil: any).
type annotatedField struct {
	annotation, value string
	fits              func(string) bool
}

// annotatedFields is what a v1beta2 object keeps of its v1 original's annotations that
// share a key with a field. Embedded, its keys sit in the conversion data as before.
type annotatedFields struct {
	// FieldAnnotations: annotations the v1 object carried besides the field of that key
	// (the field's value holds the annotation on the v1beta2 side), by key.
	FieldAnnotations map[string]string `json:"fieldAnnotations,omitempty"`
	// AnnotationsAsAnnotations: annotations the v1 object carried without the field;
	// converted back they stay annotations.
	AnnotationsAsAnnotations []string `json:"annotationsAsAnnotations,omitempty"`
}

// fieldToAnnotation stores a v1 field as its v1beta2 annotation. An annotation of that
// key the v1 object carried already is kept in lost (the field wins on the v1beta2
// side); one it carried while the field was empty stays an annotation both ways (an
// empty one, or one the field cannot hold, needs no record: it never becomes a field).
func fieldToAnnotation(meta *metav1.ObjectMeta, f annotatedField, lost *annotatedFields) {
	key, value := f.annotation, f.value
	prev, had := meta.Annotations[key]
	switch {
	case value == "" && prev != "":
		// Converted back, a non-empty annotation would become the field, if it fits.
		if f.fits == nil || f.fits(prev) {
			lost.AnnotationsAsAnnotations = append(lost.AnnotationsAsAnnotations, key)
		}
		return
	case value == "":
		return
	case had:
		if lost.FieldAnnotations == nil {
			lost.FieldAnnotations = map[string]string{}
		}
		lost.FieldAnnotations[key] = prev
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[key] = value
}

// annotationToField takes a v1beta2 annotation out of meta as the value of its v1 field,
// restoring what fieldToAnnotation kept. An annotation that was an annotation on the v1
// side too is left where it is, and so is an empty one (an empty field means unset) and
// one the field cannot hold (fits false: it would not convert back to the same text).
func annotationToField(meta *metav1.ObjectMeta, key string, kept annotatedFields, fits func(string) bool) string {
	v := meta.Annotations[key]
	if v == "" || slices.Contains(kept.AnnotationsAsAnnotations, key) || !fits(v) {
		return ""
	}
	delete(meta.Annotations, key)
	if prev, ok := kept.FieldAnnotations[key]; ok {
		meta.Annotations[key] = prev
	}
	if len(meta.Annotations) == 0 {
		meta.Annotations = nil
	}
	return v
}

// anyValue: a string field holds any annotation.
func anyValue(string) bool { return true }
